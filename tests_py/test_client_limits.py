"""The size limits through Client and AsyncClient: a job type's result cap (max_result_bytes),
a result over it (InvalidInputError for complete_job, outcome result_too_large in complete_jobs),
and a log line over the attempt's 1000 (None instead of an id)."""

from __future__ import annotations

import asyncio

import pytest

from pgrun.client import AsyncClient, Client
from pgrun.errors import InvalidInputError


def test_client_result_cap(db: str) -> None:
    with Client.connect(db) as client:
        definition = client.upsert_job_definition("t.capped", max_result_bytes=2048)
        assert definition.max_result_bytes == 2048
        assert client.upsert_job_definition("t.default").max_result_bytes is None

        client.enqueue_job("t.capped", {})
        client.enqueue_job("t.capped", {})
        big, small = client.claim_jobs("w1", max_jobs=2, lease_seconds=60)
        with pytest.raises(InvalidInputError) as refused:
            client.complete_job(big.job_id, big.lease_token, {"blob": "x" * 3000})
        assert refused.value.code == "job.result_too_large"
        outcomes = client.complete_jobs(
            [
                (big.job_id, big.lease_token, {"blob": "x" * 3000}),
                (small.job_id, small.lease_token, {"ok": 1}),
            ]
        )
        assert [(o.outcome, o.lost_reason) for o in outcomes] == [
            ("result_too_large", None),
            ("succeeded", None),
        ]
        assert client.get_job(big.job_id)["status"] == "running"

        client.enqueue_job("t.default", {})
        (job,) = client.claim_jobs("w1", lease_seconds=60)
        ids = [client.append_job_log(job.job_id, job.lease_token, f"line {n}") for n in range(1001)]
        assert all(isinstance(i, int) for i in ids[:1000]) and ids[1000] is None
        assert client.get_job(job.job_id)["attempts"][0]["log_lines_dropped"] == 1


def test_async_client_result_cap(db: str) -> None:
    async def run() -> None:
        async with await AsyncClient.connect(db) as client:
            definition = await client.upsert_job_definition("t.capped", max_result_bytes=16777216)
            assert definition.max_result_bytes == 16777216

    asyncio.run(run())
