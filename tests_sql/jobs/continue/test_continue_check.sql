-- pgrun._continue_check: the argument rules of one continuation, shared by continue_job (its
-- own arguments) and continue_jobs (the first element that breaks one, named): a step that
-- is NULL, blank or over 256 characters, a delay or retry_delay outside 0 s..100 years, a
-- max_attempts outside 1..1000. NULL delays and max_attempts pass.
BEGIN;
SELECT plan(9);

SELECT lives_ok(
    $$SELECT pgrun._continue_check(NULL, 'next', NULL, NULL, NULL)$$, 'a step and nothing else passes'
);
SELECT lives_ok(
    $$SELECT pgrun._continue_check(3, repeat('s', 256), '100 years', 1000, '0 s')$$, 'the edges pass'
);
SELECT throws_ok(
    $$SELECT pgrun._continue_check(NULL, NULL, NULL, NULL, NULL)$$, 'RQ003', 'job.invalid_step', 'a NULL step'
);
SELECT throws_ok(
    $$SELECT pgrun._continue_check(NULL, repeat('s', 257), NULL, NULL, NULL)$$,
    'RQ003', 'job.invalid_step', 'a step of 257 characters'
);
SELECT is(
    pgrun_test.error_detail($$SELECT pgrun._continue_check(NULL, ' ', NULL, NULL, NULL)$$),
    'next_step '' '' is NULL, blank or longer than 256 characters',
    'a blank step, named as continue_job names it'
);
SELECT is(
    pgrun_test.error_detail($$SELECT pgrun._continue_check(7, ' ', NULL, NULL, NULL)$$),
    'next_step (element 7) '' '' is NULL, blank or longer than 256 characters',
    'a batch element is named by its place'
);
SELECT throws_ok(
    $$SELECT pgrun._continue_check(NULL, 'next', '-1 s', NULL, NULL)$$, 'RQ003', 'job.invalid_delay', 'a negative delay'
);
SELECT throws_ok(
    $$SELECT pgrun._continue_check(NULL, 'next', NULL, 1001, NULL)$$,
    'RQ003', 'job.invalid_max_attempts', 'max_attempts over 1000'
);
SELECT is(
    pgrun_test.error_detail($$SELECT pgrun._continue_check(2, 'next', NULL, NULL, '101 years')$$),
    'retry_delay (element 2) 101 years is outside 0 seconds..100 years',
    'a retry_delay over 100 years, its element named'
);

SELECT * FROM finish();
ROLLBACK;
