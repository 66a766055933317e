-- pgrun._workflow_check_acyclic(steps): raise workflow.cycle_detected when the edges
-- among the given steps (in the normal form of pgrun._workflow_check_steps, sorted by
-- key) form a cycle. Dependencies on keys outside the array are ignored: existing steps
-- of a run never depend on appended ones, so a cycle can only run through new steps.
--
-- Kahn's algorithm over node numbers 1..n, in O(steps + edges) whatever the shape: the
-- edges are laid out by source (v_start[i] is where node i's edges begin in v_dsts), the
-- in-degrees count down as nodes leave the queue, and when some node never reaches zero
-- the leftover nodes contain a cycle. Walking back from one of them along prerequisites
-- that are left over too must come round; that loop is reported in DETAIL (long ones
-- abbreviated).
--
-- Locks: none. Errors: workflow.cycle_detected (RQ003).

CREATE OR REPLACE FUNCTION pgrun._workflow_check_acyclic(p_steps jsonb)
RETURNS void
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_count integer := jsonb_array_length(p_steps);
    v_keys text[];
    v_srcs integer[];
    v_dsts integer[];
    v_indeg integer[];
    v_start integer[];
    v_queue integer[];
    v_head integer := 1;
    v_tail integer := 0;
    v_node integer;
    v_target integer;
    v_pred integer[];
    v_seen integer[];
    v_path integer[];
    v_len integer;
    v_cycle text[];
BEGIN
    SELECT array_agg(s.step ->> 'key' ORDER BY s.n) INTO v_keys
    FROM jsonb_array_elements(p_steps) WITH ORDINALITY AS s (step, n);

    -- Edges among the steps, as node numbers 1..n (key order), sorted by source.
    SELECT
        coalesce(array_agg(src.n ORDER BY src.n, dst.n), '{}'),
        coalesce(array_agg(dst.n ORDER BY src.n, dst.n), '{}')
    INTO v_srcs, v_dsts
    FROM jsonb_array_elements(p_steps) WITH ORDINALITY AS dst (step, n)
    CROSS JOIN LATERAL jsonb_array_elements(dst.step -> 'depends_on') AS d (dep)
    JOIN unnest(v_keys) WITH ORDINALITY AS src (key, n) ON src.key = d.dep ->> 'step';

    IF cardinality(v_srcs) = 0 THEN
        RETURN;
    END IF;

    -- in-degree per node, and where each node's outgoing edges start in v_dsts (sorted by source)
    SELECT array_agg(x.indeg ORDER BY x.i), array_agg(x.start ORDER BY x.i)
    INTO v_indeg, v_start
    FROM (
        SELECT
            g.i,
            coalesce(ind.cnt, 0) AS indeg,
            1 + coalesce(
                sum(coalesce(outd.cnt, 0)) OVER (ORDER BY g.i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                0
            )::integer AS start
        FROM generate_series(1, v_count + 1) AS g (i)
        LEFT JOIN (
            SELECT t.n, count(*)::integer AS cnt FROM unnest(v_dsts) AS t (n) GROUP BY t.n
        ) AS ind ON ind.n = g.i
        LEFT JOIN (
            SELECT t.n, count(*)::integer AS cnt FROM unnest(v_srcs) AS t (n) GROUP BY t.n
        ) AS outd ON outd.n = g.i
    ) AS x;

    SELECT coalesce(array_agg(g.i ORDER BY g.i), '{}') INTO v_queue
    FROM generate_series(1, v_count) AS g (i)
    WHERE v_indeg[g.i] = 0;
    v_tail := cardinality(v_queue);
    v_queue := v_queue || array_fill(0, ARRAY[v_count - v_tail]);

    WHILE v_head <= v_tail LOOP
        v_node := v_queue[v_head];
        v_head := v_head + 1;
        FOR v_k IN v_start[v_node] .. v_start[v_node + 1] - 1 LOOP
            v_target := v_dsts[v_k];
            v_indeg[v_target] := v_indeg[v_target] - 1;
            IF v_indeg[v_target] = 0 THEN
                v_tail := v_tail + 1;
                v_queue[v_tail] := v_target;
            END IF;
        END LOOP;
    END LOOP;

    IF v_tail = v_count THEN
        RETURN;
    END IF;

    -- Every step left has a prerequisite that is left too: walking back along such
    -- prerequisites must come round, and that loop is a cycle to report.
    SELECT array_agg(p.src ORDER BY g.i) INTO v_pred
    FROM generate_series(1, v_count) AS g (i)
    LEFT JOIN (
        SELECT DISTINCT ON (e.dst) e.dst, e.src
        FROM unnest(v_srcs, v_dsts) AS e (src, dst)
        WHERE v_indeg[e.src] > 0 AND v_indeg[e.dst] > 0
        ORDER BY e.dst, e.src
    ) AS p ON p.dst = g.i;

    SELECT min(g.i) INTO v_node FROM generate_series(1, v_count) AS g (i) WHERE v_indeg[g.i] > 0;
    v_seen := array_fill(0, ARRAY[v_count]);
    v_path := '{}';
    v_len := 0;
    WHILE v_seen[v_node] = 0 LOOP
        v_len := v_len + 1;
        v_seen[v_node] := v_len;
        v_path := v_path || v_node;
        v_node := v_pred[v_node];
    END LOOP;
    -- v_path[v_seen[v_node] .. v_len] is the cycle, each step followed by its prerequisite
    SELECT array_agg(v_keys[v_path[g.i]] ORDER BY g.i DESC) INTO v_cycle
    FROM generate_series(v_seen[v_node], v_len) AS g (i);

    PERFORM pgrun._raise(
        'workflow.cycle_detected',
        format(
            'the dependencies form a cycle of %s steps: %s',
            cardinality(v_cycle),
            CASE WHEN cardinality(v_cycle) <= 10
                THEN array_to_string(v_cycle || v_cycle[1], ' -> ')
                ELSE array_to_string(v_cycle[1:5], ' -> ') || ' -> ... -> '
                    || array_to_string(v_cycle[cardinality(v_cycle) - 2:] || v_cycle[1], ' -> ')
            END
        ) || ' (each step is needed by the next)',
        'A workflow is a DAG: remove one dependency of the cycle.'
    );
END;
$$;

REVOKE EXECUTE ON FUNCTION pgrun._workflow_check_acyclic(jsonb) FROM public;

COMMENT ON FUNCTION pgrun._workflow_check_acyclic(jsonb) IS
'Private: raise workflow.cycle_detected when the dependencies among normalized steps form a cycle.';
