-- count_jobs counts only the jobs the caller may see, exactly as list_jobs lists them
-- (pgrun._caller_scope): a tenant its own organizations' jobs, never another's, whatever
-- organization_id it passes; a role without tenancy the work without an organization; an
-- admin everything. (docs/security.md, "Tenancy")
BEGIN;
SELECT plan(8);

-- SETUP: organizations A and B each have a queued and a dead job; one queued job has none
SELECT * FROM pgrun_test.two_tenants() \gset

-- TEST: a tenant
SELECT is(
    pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT string_agg(status || '=' || jobs, ' ' ORDER BY n) FROM pgrun.count_jobs() WITH ORDINALITY AS c (status, jobs, n)$$),
    'queued=1 running=0 succeeded=0 dead=1 cancelled=0',
    'tenant A counts its own jobs only'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_tenant_a', format($$SELECT string_agg(status || '=' || jobs, ' ' ORDER BY n) FROM pgrun.count_jobs(organization_id => %L) WITH ORDINALITY AS c (status, jobs, n)$$, :'org_a')),
    'queued=1 running=0 succeeded=0 dead=1 cancelled=0',
    'naming its organization: the same'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_tenant_a', format($$SELECT sum(jobs)::text FROM pgrun.count_jobs(organization_id => %L)$$, :'org_b')),
    '0',
    'naming organization B counts nothing'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT sum(jobs)::text FROM pgrun.count_jobs()$$),
    pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT count(*)::text FROM pgrun.list_jobs(max_rows => 1000)$$),
    'as many jobs as list_jobs shows the tenant'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_reader_a', $$SELECT jobs::text FROM pgrun.count_jobs('dead')$$),
    '1',
    'a reader bound to A: A''s one dead job'
);

-- TEST: no tenancy row, and an admin
SELECT is(
    pgrun_test.as_role('pgrun_tap_producer', $$SELECT string_agg(status || '=' || jobs, ' ' ORDER BY n) FROM pgrun.count_jobs() WITH ORDINALITY AS c (status, jobs, n)$$),
    'queued=1 running=0 succeeded=0 dead=0 cancelled=0',
    'a producer without a tenancy row counts the work without an organization'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_admin', $$SELECT string_agg(status || '=' || jobs, ' ' ORDER BY n) FROM pgrun.count_jobs() WITH ORDINALITY AS c (status, jobs, n)$$),
    'queued=3 running=0 succeeded=0 dead=2 cancelled=0',
    'an admin counts every organization'
);
SELECT is(
    pgrun_test.as_role('pgrun_tap_admin', format($$SELECT string_agg(status || '=' || jobs, ' ' ORDER BY n) FROM pgrun.count_jobs(organization_id => %L) WITH ORDINALITY AS c (status, jobs, n)$$, :'org_b')),
    'queued=1 running=0 succeeded=0 dead=1 cancelled=0',
    'an admin naming B counts B''s'
);

SELECT * FROM finish();
ROLLBACK;
