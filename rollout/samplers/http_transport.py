"""The HTTP transport under :class:`~pairrl.rollout.samplers.openai_http.OpenAISampler`.

Requests of one sampler call go out concurrently on an httpx ``AsyncClient`` (up to
``max_concurrency`` at a time), each with explicit connect and read timeouts and bounded
retries only for failures that can pass (transport errors, timeouts, HTTP 408/429/5xx, a
response vLLM aborted). Every failure is a :class:`SamplerError` with its reason.

A server that stops while requests are in flight must not hold them for the whole read
timeout (a SIGTERM'd vLLM server closes its port at once but may never answer the
requests it holds). While requests are in flight a watchdog connects to the server's
port every ``liveness_interval_s``; after ``liveness_failures`` refused (or timed-out)
connects in a row, every in-flight attempt is abandoned as a ``transport`` failure naming
the probe's error, and counts as one attempt of its bounded retries. A stopped server
therefore surfaces within about ``liveness_interval_s * liveness_failures`` plus the
retries' backoff (about 5 s with the defaults), with a warning logged. ``deadline_s``,
when set, bounds each request's total time over all its attempts.

A batch started inside ``remote_call_budget`` (``pairrl.rollout.samplers.call_budget``)
also obeys the run's deadline for all remote calls (requests in flight at the deadline
are abandoned, later ones are not sent: failures of kind ``deadline``) and reports its
requests, retries, timeouts and the time spent waiting on failures to that budget.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from pairrl.rollout.samplers.base import SamplerError
from pairrl.rollout.samplers.call_budget import CallBudget, active_call_budget

__all__ = ["Batch", "HttpTransport"]

_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
logger = logging.getLogger(__name__)


@dataclass
class Batch:
    """One call's requests: the client, the concurrency limit and the server's state."""

    client: httpx.AsyncClient
    slots: asyncio.Semaphore
    down: asyncio.Event = field(default_factory=asyncio.Event)
    down_reason: str = ""
    done: bool = False  # every request has its answer: the watchdog stops
    budget: CallBudget | None = None  # the run's deadline and measurements, if any


@dataclass
class _Tries:
    """What one request's attempts cost: retries made, and the start of the failure wait
    (a failed attempt or a backoff) in progress, if any."""

    retries: int = 0
    waiting_since: float | None = None


class HttpTransport:
    """POSTs JSON to ``base_url`` with the limits above; see the module docstring."""

    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout: float,
        read_timeout: float,
        max_retries: int,
        retry_backoff_s: float,
        max_concurrency: int,
        headers: dict[str, str],
        liveness_interval_s: float | None,
        liveness_failures: int,
        deadline_s: float | None,
    ) -> None:
        if connect_timeout <= 0 or read_timeout <= 0:
            raise ValueError("connect_timeout and read_timeout must be > 0")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if liveness_interval_s is not None and liveness_interval_s <= 0:
            raise ValueError("liveness_interval_s must be > 0 (or None: no watchdog)")
        if liveness_failures < 1:
            raise ValueError(f"liveness_failures must be >= 1, got {liveness_failures}")
        if deadline_s is not None and deadline_s <= 0:
            raise ValueError("deadline_s must be > 0 (or None)")
        self.base_url = base_url.rstrip("/")
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self.max_concurrency = max_concurrency
        self.headers = headers
        self.liveness_interval_s = liveness_interval_s
        self.liveness_failures = liveness_failures
        self.deadline_s = deadline_s
        parts = urlsplit(self.base_url)
        default_port = 443 if parts.scheme == "https" else 80
        self._address = (parts.hostname or "127.0.0.1", parts.port or default_port)

    def post_one(self, path: str, body: dict[str, Any]) -> dict[str, Any] | SamplerError:
        """POST with bounded retries; the parsed JSON body or the last failure's reason."""
        return self.map(lambda batch, item: self.post(batch, *item), [(path, body)])[0]

    def map(self, fn: Callable[[Batch, Any], Awaitable[Any]], items: Sequence[Any]) -> list:
        """``fn(batch, item)`` for every item, concurrently, under one watchdog."""
        if not items:
            return []
        budget = active_call_budget()  # read here: a thread of its own would not see it
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._gather(fn, items, budget))
        # Called from inside an event loop (a notebook): run the batch on a thread of its own.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, self._gather(fn, items, budget)).result()

    async def _gather(
        self,
        fn: Callable[[Batch, Any], Awaitable[Any]],
        items: Sequence[Any],
        budget: CallBudget | None,
    ):
        started = time.monotonic()
        timeout = httpx.Timeout(self.read_timeout, connect=self.connect_timeout)
        async with httpx.AsyncClient(
            timeout=timeout,
            transport=httpx.AsyncHTTPTransport(retries=0),  # our retries only
            headers=self.headers,
            limits=httpx.Limits(max_connections=self.max_concurrency),
        ) as client:
            batch = Batch(client, asyncio.Semaphore(self.max_concurrency), budget=budget)
            watchdog = asyncio.create_task(self._watch(batch)) if self.liveness_interval_s else None
            try:
                return await asyncio.gather(*(fn(batch, item) for item in items))
            finally:
                # The flag as well as the cancel: on Python 3.11 asyncio.wait_for can swallow
                # a cancellation that lands as its probe connects, and the loop would go on.
                batch.done = True
                if watchdog is not None:
                    watchdog.cancel()
                    await asyncio.gather(watchdog, return_exceptions=True)
                if budget is not None:
                    budget.note_batch(started, time.monotonic())

    async def _watch(self, batch: Batch) -> None:
        """Probe the server's port; set ``batch.down`` after consecutive failed connects."""
        assert self.liveness_interval_s is not None
        misses = 0
        host, port = self._address
        while not batch.done:
            await asyncio.sleep(self.liveness_interval_s)
            if batch.done:
                return
            try:
                _, writer = await asyncio.wait_for(
                    asyncio.open_connection(host, port), self.connect_timeout
                )
                writer.close()
                misses = 0
                batch.down.clear()
                continue
            except (TimeoutError, OSError) as exc:
                misses += 1
                reason = f"{type(exc).__name__}: {exc}".rstrip(": ")
            if misses >= self.liveness_failures and not batch.down.is_set():
                batch.down_reason = (
                    f"server at {host}:{port} stopped accepting connections "
                    f"({misses} probes {self.liveness_interval_s:g} s apart failed, last: "
                    f"{reason})"
                )
                logger.warning("%s: abandoning the requests in flight", batch.down_reason)
                batch.down.set()

    async def post(
        self, batch: Batch, path: str, body: dict[str, Any]
    ) -> dict[str, Any] | SamplerError:
        """POST with bounded retries, within ``deadline_s`` and the run's deadline; the
        parsed JSON body or the failure's reason."""
        url, budget, tries = f"{self.base_url}{path}", batch.budget, _Tries()
        if budget is not None and budget.expired():
            budget.note_request(False, 0, by_deadline=True)
            return SamplerError("deadline", budget.deadline_reason(url))
        result = await self._within_deadlines(batch, url, body, tries)
        if budget is not None:
            failed = isinstance(result, SamplerError)
            by_deadline = failed and result.kind == "deadline"
            budget.note_request(not failed, tries.retries, by_deadline)
        return result

    async def _within_deadlines(
        self, batch: Batch, url: str, body: dict[str, Any], tries: _Tries
    ) -> dict[str, Any] | SamplerError:
        run_left = None if batch.budget is None else batch.budget.remaining()
        limits = [x for x in (self.deadline_s, run_left) if x is not None]
        if not limits:
            return await self._attempts(batch, url, body, tries)
        try:
            return await asyncio.wait_for(self._attempts(batch, url, body, tries), min(limits))
        except TimeoutError:
            if batch.budget is not None and run_left is not None and run_left == min(limits):
                return SamplerError("deadline", batch.budget.deadline_reason(url))
            return SamplerError(
                "timeout", f"no answer from {url} within deadline_s={self.deadline_s:g}"
            )

    async def _attempts(
        self, batch: Batch, url: str, body: dict[str, Any], tries: _Tries
    ) -> dict[str, Any] | SamplerError:
        attempts = self.max_retries + 1
        error: SamplerError | None = None
        try:
            for attempt in range(attempts):
                if attempt:
                    tries.retries += 1
                    tries.waiting_since = time.monotonic()
                    await asyncio.sleep(self.retry_backoff_s * 2 ** (attempt - 1))
                    self._end_wait(batch, tries)
                async with batch.slots:
                    tries.waiting_since = time.monotonic()  # a wait if the attempt fails
                    response, error = await self._one_attempt(batch, url, body)
                answer, retryable = (error, True) if response is None else _answer(url, response)
                if isinstance(answer, dict):
                    tries.waiting_since = None
                    return answer
                error = answer
                self._end_wait(batch, tries, timed_out=error.kind == "timeout")
                if not retryable:
                    return error
        except asyncio.CancelledError:  # abandoned at a deadline: its wait ends here
            self._end_wait(batch, tries)
            raise
        assert error is not None
        return SamplerError(error.kind, f"{error.reason} (after {attempts} attempt(s))")

    @staticmethod
    def _end_wait(batch: Batch, tries: _Tries, timed_out: bool = False) -> None:
        """Report the failure wait in progress (if any) to the run's budget."""
        if tries.waiting_since is not None and batch.budget is not None:
            batch.budget.note_wait(tries.waiting_since, time.monotonic(), timed_out)
        tries.waiting_since = None

    async def _one_attempt(
        self, batch: Batch, url: str, body: dict[str, Any]
    ) -> tuple[httpx.Response | None, SamplerError | None]:
        """One POST, abandoned when the watchdog finds the server gone."""
        started = time.monotonic()
        request = asyncio.create_task(batch.client.post(url, json=body))
        stopped = asyncio.create_task(batch.down.wait())
        try:
            await asyncio.wait({request, stopped}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # abandoned at a deadline: the request goes too
            request.cancel()
            raise
        finally:
            stopped.cancel()
        if not request.done():
            request.cancel()
            await asyncio.gather(request, return_exceptions=True)
            waited = time.monotonic() - started
            return None, SamplerError(
                "transport", f"{batch.down_reason}; abandoned {url} after {waited:.1f} s"
            )
        try:
            return request.result(), None
        except httpx.TimeoutException as exc:
            return None, SamplerError("timeout", f"{type(exc).__name__} on {url}: {exc}")
        except httpx.TransportError as exc:
            return None, SamplerError("transport", f"{type(exc).__name__} on {url}: {exc}")


def _answer(url: str, response: httpx.Response) -> tuple[dict[str, Any] | SamplerError, bool]:
    """A response's JSON body, or its failure and whether a retry may pass."""
    if response.status_code != 200:
        error = SamplerError(
            "http_status", f"HTTP {response.status_code} from {url}: {response.text[:300]}"
        )
        return error, response.status_code in _RETRYABLE_STATUS
    try:
        data = response.json()
    except ValueError:
        return SamplerError(
            "malformed_response", f"non-JSON body from {url}: {response.text[:200]!r}"
        ), False
    if not isinstance(data, dict):
        return SamplerError("malformed_response", f"JSON body from {url} is not an object"), False
    if _aborted(data):
        # vLLM answers the requests it holds with finish_reason "abort" when it shuts down
        # (SIGTERM) or its engine dies: the server's failure, worth a retry.
        return SamplerError(
            "transport", f"{url}: the server aborted the request (finish_reason 'abort')"
        ), True
    return data, False


def _aborted(data: dict[str, Any]) -> bool:
    choices = data.get("choices")
    return isinstance(choices, list) and any(
        isinstance(c, dict) and c.get("finish_reason") == "abort" for c in choices
    )
