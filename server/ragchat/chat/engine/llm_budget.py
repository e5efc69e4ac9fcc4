"""The budget of LLM work, per message and per user: what one question may make the model do.

Per message (`MessageBudget`: one per answer, on `ChatContext.budget` and `DocumentTools.budget`):
- CHAT_MAX_TOOL_CALLS tool calls over all rounds (searches, find/read/summarise): past it the model reads
  why in the tool's result and is asked once more without tools, to answer from what it has;
- SUMMARY_MAX_PER_MESSAGE whole-document summaries (`summarize_documents`, the Summarise action).

Per user, in Postgres counters every server process shares (db/ratelimit.py):
- RATE_LLM_CALLS_PER_MIN model calls, each charged before it is made: the loop's rounds, a follow-up's rewrite,
  every map and reduce call of a summary, the LLM rerank of a search (limit × RERANK_CANDIDATES_FACTOR calls),
  the thread's title. A message that finds the budget spent is refused with a 429 before anything runs; one
  that spends it midway ends with the `error` event `rate_limited` (the JSON doors: 429), its partial answer
  saved;
- RATE_SUMMARIES_PER_HOUR summaries started, and SUMMARY_MAX_RUNNING running at once: a lease held from the
  message's first summary until the message ends. The Summarise action takes both before its stream starts
  (429 when refused); a summary the model asks for is refused like a per-message limit.

A limit that refuses a tool ends nothing: the answer is written from what was found, and ends with a note
saying which limit was reached (`notes_text`), so nothing is cut silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from ragchat.core.errors import RateLimited
from ragchat.db.ratelimit import Lease, RateLimiter
from ragchat.settings import LimitSettings

LLM_CALLS = "LLM calls (RATE_LLM_CALLS_PER_MIN)"
SUMMARIES = "whole-document summaries (RATE_SUMMARIES_PER_HOUR)"
RUNNING = "whole-document summaries (SUMMARY_MAX_RUNNING)"
HOUR_S = 3600
LEASE_TTL_S = 60.0  # a running summary's slot outlives a process that died by at most this
NOTE_PREFIX = "Limit reached:"


@dataclass
class MessageBudget:
    """One answer's allowance. Not shared between answers; `close()` when the answer ends."""

    user_id: UUID
    limits: LimitSettings
    limiter: RateLimiter | None = None  # None: only the per-message limits (tests, tools without a server)
    rerank_cost: int = 0  # LLM calls one search costs (its LLM rerank); 0 without one
    tool_calls: int = 0
    summaries: int = 0
    notes: list[str] = field(default_factory=list)  # the limits reached, in words for the user
    _lease: Lease | None = None
    _leased: bool = False  # this message holds its summary slot (or none is needed)
    _prepaid: int = 0  # summaries admitted (slot taken, counted) before the answer started

    def _key(self, what: str) -> str:
        return f"{what}:{self.user_id}"

    async def admit(self, task: str = "answer") -> None:
        """Before anything runs or is saved: RateLimited (429) when the user's LLM calls are spent; a summary
        or comparison also takes its slot and its count here."""
        if self.limiter is None:
            return
        await self.limiter.check(self._key("llm"), self.limits.rate_llm_calls_per_min, what=LLM_CALLS)
        if task != "answer":
            await self._start_summary()
            self._prepaid += 1

    async def llm_calls(self, calls: int = 1) -> None:
        """Charge `calls` model calls before making them; RateLimited past RATE_LLM_CALLS_PER_MIN."""
        if self.limiter is not None and calls > 0:
            limit = self.limits.rate_llm_calls_per_min
            await self.limiter.hit(self._key("llm"), limit, cost=calls, what=LLM_CALLS)

    async def optional_llm_call(self) -> bool:
        """Charge one call that may be skipped (a title): False when the budget is spent."""
        try:
            await self.llm_calls(1)
        except RateLimited:
            return False
        return True

    def take_tool_call(self) -> str | None:
        """None: the call may run (counted). Otherwise why not, for the tool's result (noted for the user)."""
        cap = self.limits.chat_max_tool_calls
        if cap and self.tool_calls >= cap:
            return self._refuse(f"one message may make at most {cap} tool calls (CHAT_MAX_TOOL_CALLS)")
        self.tool_calls += 1
        return None

    async def take_summary(self) -> str | None:
        """None: the summary may run (counted, its slot held until `close`). Otherwise why not."""
        cap = self.limits.summary_max_per_message
        if cap and self.summaries >= cap:
            return self._refuse(
                f"one message may make at most {cap} whole-document "
                f"{'summary' if cap == 1 else 'summaries'} (SUMMARY_MAX_PER_MESSAGE)"
            )
        if self._prepaid:
            self._prepaid -= 1
        else:
            try:
                await self._start_summary()
            except RateLimited as exc:
                return self._refuse(exc.message)
        self.summaries += 1
        return None

    async def _start_summary(self) -> None:
        """The message's running-summary slot (once) and one more summary this hour; RateLimited when refused."""
        if self.limiter is None:
            return
        lease = None
        if not self._leased:
            limit = self.limits.summary_max_running
            lease = await self.limiter.lease(self._key("summaries-running"), limit, ttl_s=LEASE_TTL_S, what=RUNNING)
        try:
            limit = self.limits.rate_summaries_per_hour
            await self.limiter.hit(self._key("summaries"), limit, window_s=HOUR_S, what=SUMMARIES)
        except BaseException:
            if lease is not None:
                await lease.release()
            raise
        if not self._leased:
            self._lease, self._leased = lease, True

    def _refuse(self, reason: str) -> str:
        if reason not in self.notes:
            self.notes.append(reason)
        return (
            f"Error: not run: {reason}. Do not call this tool again in this message; answer from what you have "
            "and tell the user that this limit was reached."
        )

    async def close(self) -> None:
        """The answer ended (however): its summary slot is given back. Never raises."""
        lease, self._lease = self._lease, None
        if lease is not None:
            await lease.release()


def notes_text(notes: list[str]) -> str:
    """What the answer ends with when a limit refused work: one line per limit ('' when none did)."""
    return "".join(f"\n\n> {NOTE_PREFIX} {note}; the answer uses what was found before it." for note in notes)
