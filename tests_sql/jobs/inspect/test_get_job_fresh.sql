-- A job that never ran has empty attempts and dead_letters arrays, not NULLs.
BEGIN;
SELECT plan(2);

SELECT job_id AS job FROM pgrun.enqueue_job('mail.send', '{"to": "a"}') \gset

SELECT is(pgrun.get_job(:'job') -> 'attempts', '[]'::jsonb, 'no attempts: []');
SELECT is(pgrun.get_job(:'job') -> 'dead_letters', '[]'::jsonb, 'no dead letters: []');

SELECT * FROM finish();
ROLLBACK;
