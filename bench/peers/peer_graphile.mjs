// graphile-worker contestant: Node.js, graphile-worker as pinned in bench/peers/graphile/
// (package.json + package-lock.json, installed there by run.py with `npm ci`).
//
// Run as `node peer_graphile.mjs --dsn DSN --mode throughput|latency|delayed [--batched] ...`
// with the same arguments as the Python contestants (bench/peers/_common.py describes the
// workloads); prints the same JSON object as the last line of its stdout. The latency and
// delayed enqueuers are this script again with --enqueuer, as in _common.py.
//
// Settings:
//   defaults  `run()` with `concurrentJobs` = the workload's concurrency and `maxPoolSize` =
//             max(10, concurrency + 2), the pool size graphile-worker's documentation
//             recommends (its default is 10, which would starve c=50); everything else is
//             graphile-worker's default: no local queue (each worker fetches its own job),
//             completions not batched, poll 2 s, LISTEN "jobs:insert" on its own connection.
//   --batched the same plus `localQueue: { size: 50 }` (the pool fetches and locks up to 50
//             jobs at a time and hands them to its workers) and `completeJobBatchDelay: 0`,
//             `failJobBatchDelay: 0` (completions gathered until the next timer tick and
//             written in one statement), the values graphile-worker's own perfTest uses.
// Both: signal handlers off (the harness bounds the run); a logger that prints only warnings
// and errors (to stderr) and NO_LOG_SUCCESS=1, as graphile-worker's perfTest runs, so that
// neither side pays for a log line per job (the Python peers log nothing per job at their
// default level).
// Schema: `makeWorkerUtils(...).migrate()` (run() would migrate too; it finds nothing to do).
// Bulk enqueue: `WorkerUtils.addJobs` (10,000 specs per call, one `add_jobs` statement);
// single enqueue: `WorkerUtils.addJob`. Throughput: the handler that starts the N-th job
// resolves `done`; `runner.stop()` then shuts down gracefully (waits for running jobs and
// flushes batched completions), and the clock stops; every run checks that no job is left.
// Delayed: `addJob(..., { runAt })`, the stored `run_at` read back as the due time;
// `pollInterval` = --poll-s (60 s; default 2 s). graphile-worker keeps no timer for run_at:
// its NOTIFY fires on insert, a worker that finds nothing due waits for the next poll.
// Single (no worker): `WorkerUtils.addJob(NOOP, { i })`, one call per job, back to back, on
// makeWorkerUtils' pool (each addJob one `add_job` call, its own transaction); --batched
// changes only the worker's options, so run.py runs this once (the defaults row).
// Clocks: latency on process.hrtime (CLOCK_MONOTONIC, what Python's time.monotonic() reads),
// delayed on wall-clock unix seconds, as _common.py.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

process.env.NO_LOG_SUCCESS ??= "1"; // read when graphile-worker is loaded, so set it first
const require = createRequire(new URL("./graphile/package.json", import.meta.url));
const { run, makeWorkerUtils, Logger } = require("graphile-worker");

const NOOP = "bench_noop";
const CHUNK = 10_000;
const DEFAULT_POLL_MS = 2000; // graphile-worker's pollInterval default
const BATCHED = {
  localQueue: { size: 50 },
  completeJobBatchDelay: 0,
  failJobBatchDelay: 0,
};

function parse() {
  const { values } = parseArgs({
    options: {
      dsn: { type: "string" },
      mode: { type: "string" },
      jobs: { type: "string", default: "20000" },
      concurrency: { type: "string", default: "10" },
      samples: { type: "string", default: "200" },
      warmup: { type: "string", default: "5" },
      "interval-ms": { type: "string", default: "20" },
      "idle-s": { type: "string", default: "1" },
      "delay-s": { type: "string", default: "1" },
      "poll-s": { type: "string" },
      "timeout-s": { type: "string", default: "600" },
      enqueuer: { type: "boolean", default: false },
      batched: { type: "boolean", default: false },
    },
  });
  if (!values.dsn || !["throughput", "latency", "delayed", "single"].includes(values.mode)) {
    throw new Error("usage: peer_graphile.mjs --dsn DSN --mode throughput|latency|delayed|single [--batched]");
  }
  return {
    dsn: values.dsn,
    mode: values.mode,
    jobs: Number(values.jobs),
    concurrency: Number(values.concurrency),
    samples: Number(values.samples),
    warmup: Number(values.warmup),
    intervalMs: Number(values["interval-ms"]),
    idleS: Number(values["idle-s"]),
    delayS: Number(values["delay-s"]),
    pollS: values["poll-s"] === undefined ? null : Number(values["poll-s"]),
    timeoutS: Number(values["timeout-s"]),
    enqueuer: values.enqueuer,
    batched: values.batched,
  };
}

// --- clocks, percentiles, output (as _common.py) ---

const now = () => Number(process.hrtime.bigint()) / 1e9;
const wall = () => (performance.timeOrigin + performance.now()) / 1000;
const sleep = (s) => new Promise((resolve) => setTimeout(resolve, Math.max(0, s * 1000)));

function roundHalfEven(x) {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function percentiles(valuesMs) {
  const v = [...valuesMs].sort((a, b) => a - b);
  const n = v.length;
  if (n === 0) return { p50_ms: NaN, p99_ms: NaN, mean_ms: NaN };
  const median = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  const rank99 = Math.max(0, Math.min(n - 1, roundHalfEven(0.99 * n) - 1));
  return {
    p50_ms: median,
    p99_ms: v[rank99],
    mean_ms: v.reduce((a, b) => a + b, 0) / n,
    min_ms: v[0],
    max_ms: v[n - 1],
  };
}

function emit(result) {
  // JSON has no NaN; Python's json.dumps writes it and json.loads reads it back.
  const text = JSON.stringify(result, (_k, x) => (typeof x === "number" && Number.isNaN(x) ? "__NaN__" : x));
  process.stdout.write(text.replaceAll('"__NaN__"', "NaN") + "\n");
}

function withTimeout(promise, seconds, what) {
  let timer;
  const limit = new Promise((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${seconds} s`)), seconds * 1000);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

// --- graphile-worker ---

const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") process.stderr.write(`[${level}] ${message}\n`);
});

function workerOptions(args) {
  return {
    connectionString: args.dsn,
    concurrentJobs: args.concurrency,
    maxPoolSize: Math.max(10, args.concurrency + 2),
    ...(args.pollS === null ? {} : { pollInterval: Math.round(args.pollS * 1000) }),
    ...(args.batched ? BATCHED : {}),
  };
}

function settings(args) {
  const opts = workerOptions(args);
  const pollMs = opts.pollInterval ?? DEFAULT_POLL_MS;
  return {
    driver: `node-postgres pool (maxPoolSize ${opts.maxPoolSize}) + 1 LISTEN connection from it`,
    concurrentJobs: args.concurrency,
    maxPoolSize: opts.maxPoolSize,
    localQueue_size: args.batched ? BATCHED.localQueue.size : -1,
    completeJobBatchDelay_ms: args.batched ? BATCHED.completeJobBatchDelay : -1,
    failJobBatchDelay_ms: args.batched ? BATCHED.failJobBatchDelay : -1,
    notify: 'LISTEN "jobs:insert"',
    pollInterval_ms: pollMs,
    poll_interval_s: pollMs / 1000,
    delayed_jobs: "no timer for run_at: fetched on the next NOTIFY or poll",
  };
}

function startWorker(args, handler) {
  return run({
    preset: { worker: workerOptions(args) },
    taskList: { [NOOP]: handler },
    noHandleSignals: true,
    logger,
  });
}

async function utilsFor(dsn) {
  return makeWorkerUtils({ connectionString: dsn, logger });
}

async function install(dsn) {
  const utils = await utilsFor(dsn);
  try {
    await utils.migrate();
  } finally {
    await utils.release();
  }
}

async function countLeft(utils) {
  return utils.withPgClient(async (client) => {
    const res = await client.query("SELECT count(*)::int AS n FROM graphile_worker.jobs");
    return res.rows[0].n;
  });
}

async function throughput(args) {
  const utils = await utilsFor(args.dsn);
  let enqueueS;
  try {
    const t = now();
    for (let start = 0; start < args.jobs; start += CHUNK) {
      const count = Math.min(CHUNK, args.jobs - start);
      const specs = Array.from({ length: count }, (_x, k) => ({ identifier: NOOP, payload: { i: start + k } }));
      await utils.addJobs(specs);
    }
    enqueueS = now() - t;
    await utils.withPgClient((client) => client.query("ANALYZE"));
  } finally {
    await utils.release();
  }

  let handled = 0;
  let resolveDone;
  const done = new Promise((resolve) => {
    resolveDone = resolve;
  });
  const start = now();
  const runner = await startWorker(args, async () => {
    handled += 1;
    if (handled === args.jobs) resolveDone();
  });
  try {
    await withTimeout(done, args.timeoutS, "throughput");
  } finally {
    await runner.stop();
  }
  const elapsed = now() - start;

  const check = await utilsFor(args.dsn);
  let left;
  try {
    left = await countLeft(check);
  } finally {
    await check.release();
  }
  return {
    jobs: args.jobs,
    handled,
    left_in_queue: left,
    enqueue_rows_per_s: args.jobs / enqueueS,
    elapsed_s: elapsed,
    jobs_per_s: args.jobs / elapsed,
    settings: settings(args),
  };
}

async function single(args) {
  const utils = await utilsFor(args.dsn);
  let elapsed;
  let rows;
  try {
    for (let i = 0; i < args.warmup; i++) await utils.addJob(NOOP, { i });
    const t = now();
    for (let i = args.warmup; i < args.warmup + args.jobs; i++) await utils.addJob(NOOP, { i });
    elapsed = now() - t;
    rows = await countLeft(utils);
  } finally {
    await utils.release();
  }
  return {
    jobs: args.jobs,
    warmup: args.warmup,
    elapsed_s: elapsed,
    jobs_per_s: args.jobs / elapsed,
    mean_ms: (elapsed * 1000) / args.jobs,
    rows,
    rows_expected: args.jobs + args.warmup,
    settings: { api: "WorkerUtils.addJob, one call per job", driver: "node-postgres pool (makeWorkerUtils)" },
  };
}

// Run this script again as the enqueuer; resolve with the JSON object it printed last.
function spawnEnqueuer(timeoutS) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2), "--enqueuer"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the enqueuer timed out after ${timeoutS} s`));
    }, timeoutS * 1000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`the enqueuer exited with ${code}`));
      const lines = out.split("\n").filter((x) => x.startsWith("{"));
      if (!lines.length) return reject(new Error("the enqueuer printed no result"));
      resolve(JSON.parse(lines[lines.length - 1]));
    });
  });
}

async function waitFor(predicate, deadline, stepS) {
  while (now() < deadline && !predicate()) await sleep(stepS);
}

async function latency(args) {
  const startedAt = new Map();
  const runner = await startWorker(args, async (payload) => {
    startedAt.set(payload.i, now());
  });
  let commitAt;
  try {
    await sleep(args.idleS);
    const out = await spawnEnqueuer(args.timeoutS);
    commitAt = new Map(Object.entries(out.commit_at).map(([k, v]) => [Number(k), Number(v)]));
    // the last jobs' handlers may still be on their way
    await waitFor(() => [...commitAt.keys()].every((i) => startedAt.has(i)), now() + 5, 0.01);
  } finally {
    await runner.stop();
  }
  const values = [];
  for (let i = args.warmup; i < args.warmup + args.samples; i++) {
    if (commitAt.has(i) && startedAt.has(i)) values.push((startedAt.get(i) - commitAt.get(i)) * 1000);
  }
  return {
    ...percentiles(values),
    samples: values.length,
    missing: args.samples - values.length,
    settings: settings(args),
  };
}

async function delayed(args) {
  const cfg = settings(args);
  const startedAt = new Map();
  const runner = await startWorker(args, async (payload) => {
    startedAt.set(payload.i, wall());
  });
  let runAt;
  let enqueuedBy;
  try {
    await sleep(args.idleS);
    const out = await spawnEnqueuer(args.timeoutS);
    runAt = new Map(Object.entries(out.run_at).map(([k, v]) => [Number(k), Number(v)]));
    enqueuedBy = Number(out.enqueued_by);
    const lastDue = runAt.size ? Math.max(...runAt.values()) : wall();
    const deadline = now() + Math.max(0, lastDue - wall()) + cfg.poll_interval_s + 10;
    await waitFor(() => [...runAt.keys()].every((i) => startedAt.has(i)), deadline, 0.05);
  } finally {
    await runner.stop();
  }
  const values = [...runAt.keys()]
    .sort((a, b) => a - b)
    .filter((i) => startedAt.has(i))
    .map((i) => (startedAt.get(i) - runAt.get(i)) * 1000);
  return {
    ...percentiles(values),
    samples: values.length,
    missing: args.samples - values.length,
    early: values.filter((v) => v < 0).length,
    enqueued_before_first_due_ms: runAt.size ? (Math.min(...runAt.values()) - enqueuedBy) * 1000 : null,
    settings: cfg,
  };
}

async function enqueuer(args) {
  const utils = await utilsFor(args.dsn);
  try {
    if (args.mode === "delayed") {
      const start = wall();
      const runAt = {};
      for (let i = 0; i < args.samples; i++) {
        const due = start + args.delayS + (i * args.intervalMs) / 1000;
        const job = await utils.addJob(NOOP, { i }, { runAt: new Date(due * 1000) });
        const stored = await utils.withPgClient((client) =>
          client.query("SELECT extract(EPOCH FROM run_at)::float8 AS t FROM graphile_worker.jobs WHERE id = $1", [
            job.id,
          ]),
        );
        runAt[i] = Number(stored.rows[0].t);
      }
      emit({ run_at: runAt, enqueued_by: wall() });
      return;
    }
    const commitAt = {};
    const deadline = now() + args.timeoutS;
    for (let i = 0; i < args.warmup + args.samples; i++) {
      if (now() > deadline) break;
      const began = now();
      await utils.addJob(NOOP, { i });
      commitAt[i] = now();
      await sleep(args.intervalMs / 1000 - (now() - began));
    }
    emit({ commit_at: commitAt });
  } finally {
    await utils.release();
  }
}

function versions() {
  const pkg = (name) =>
    JSON.parse(readFileSync(new URL(`./graphile/node_modules/${name}/package.json`, import.meta.url), "utf8")).version;
  return { "graphile-worker": pkg("graphile-worker"), pg: pkg("pg"), node: process.version };
}

async function main() {
  const args = parse();
  if (args.enqueuer) {
    await enqueuer(args);
    return;
  }
  await install(args.dsn);
  const modes = { throughput, latency, delayed, single };
  const result = await modes[args.mode](args);
  Object.assign(result, {
    contestant: args.batched ? "graphile-worker batched" : "graphile-worker",
    mode: args.mode,
    concurrency: args.concurrency,
    versions: versions(),
  });
  emit(result);
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
