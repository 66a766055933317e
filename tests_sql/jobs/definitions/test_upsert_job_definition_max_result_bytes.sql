-- upsert_job_definition(max_result_bytes): NULL = the built-in 1 MiB; 1 KiB..16 MiB, never
-- unbounded; job.invalid_max_result_bytes otherwise, writing nothing.
BEGIN;
SELECT plan(9);

-- TEST: the default is NULL (1 MiB)
SELECT is(
    (SELECT max_result_bytes FROM pgrun.upsert_job_definition('mail.send')),
    NULL::integer,
    'left out, the cap is NULL'
);
SELECT is(pgrun._job_result_cap('mail.send'), 1048576, 'NULL means 1 MiB');
SELECT is(pgrun._job_result_cap('no.such.type'), 1048576, 'a type without a definition gets 1 MiB');

-- TEST: a cap is stored, and a change is audited
SELECT is(
    (SELECT max_result_bytes FROM pgrun.upsert_job_definition('mail.send', max_result_bytes => 16384)),
    16384,
    'a cap is stored'
);
SELECT is(pgrun._job_result_cap('mail.send'), 16384, 'and applies');
SELECT is(
    (SELECT detail ->> 'max_result_bytes' FROM pgrun.audit_log
     WHERE action = 'job_definition.upserted' AND subject = 'mail.send' ORDER BY id DESC LIMIT 1),
    '16384',
    'the audit row records it'
);

-- TEST: out of range
SELECT throws_ok(
    $$SELECT pgrun.upsert_job_definition('mail.send', max_result_bytes => 1023)$$,
    'RQ003', 'job.invalid_max_result_bytes', 'below 1 KiB'
);
SELECT throws_ok(
    $$SELECT pgrun.upsert_job_definition('mail.send', max_result_bytes => 16777217)$$,
    'RQ003', 'job.invalid_max_result_bytes', 'above 16 MiB: no type is unbounded'
);
SELECT is(pgrun._job_result_cap('mail.send'), 16384, 'a refused call changed nothing');

SELECT * FROM finish();
ROLLBACK;
