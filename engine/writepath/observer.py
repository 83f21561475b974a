"""The observer: distils a session's new turns into at most 3 proposals, queued as checkpoints.

Triggers (decided by `due_sessions`, from persisted state only, so a restart loses nothing):
idle for `session.observer_idle_seconds` (min 10), every `session.distill_every_turns` completed
turns (0 disables), the session ended, or passivated after `session.idle_timeout_minutes` idle.
One run at a time per session; a run made stale by newer turns is discarded. Recalled memories
appear in the transcript as `[recalled-memory]` and the prompt says to skip them; proposals
accepted by earlier runs are passed back so they are not restated. With no LLM configured the
rule-based extractor distils instead, keeping at most 3 proposals per user turn (it cannot
consolidate them). A failed LLM call is retried after a back-off; on the third failure in a row,
or when the provider refused the request itself (a 4xx: an unknown model, a bad key), the rules
distil the same turns in the same run, so no conversation is left undistilled. The observer never writes memories:
proposals go into the checkpoint queue at priority 60.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from dataclasses import dataclass, replace

import apsw

from .. import search
from .. import sessions as session_store
from ..db import one, rows, scalar
from ..memory import MAX_TITLE_CHARS, fingerprint
from ..person import conjugate
from ..secretfilter import redact
from ..stance import standing
from . import checkpoints, extractor, mergeguard, review
from .llm import LlmError, first_json_object
from .proposals import MAX_PROPOSALS, Proposal, gate
from .when import anchored

log = logging.getLogger("keepmind.writepath.observer")
PROMPT_VERSION = "observer-v3"
MAX_TRANSCRIPT_CHARS = 24_000
RETRY_BASE_MS = 60_000
LLM_FAILURES_BEFORE_RULES = 3

SYSTEM = """You distil a conversation between a user and an assistant into long-term memories.
Output a single JSON object {"proposals": [...]} and nothing else (no code fences).
Propose 0 to 3 memories; consolidate related facts into one.

Store operational, lasting facts: the user's preferences for tools, services and travel, memberships,
home places, work and project context, technical decisions, workflows, communication preferences,
and travel logistics. Never store credentials, financial account numbers or balances, or medical
information. Skip family or relationship dynamics, opinions of people and venting unless the user
explicitly asks. Always skip greetings, coordination chatter, superseded reasoning, raw tool output,
walked-back statements, and anything already stated in [recalled-memory] or [loaded-skill] lines or
in existingProposals (reuse an existing anchor to enrich it instead of restating it).

Each proposal:
{"operation": "upsert_document" | "append_record",
 "memoryClass": "durable_fact" | "evidence" | "trace",
 "subjectKind": "user" | "project" | "assistant" | "event" | ...,
 "subjectValue": "...",
 "anchor": {"canonicalName": "kebab-case-slug", "anchorType": "preference|membership|place|project|person|event|..."},
 "title": "3-8 word noun phrase, no class prefix",
 "content": "one or two self-contained sentences naming the subject",
 "aliases": ["..."], "facets": ["..."],
 "relations": [{"relationType": "member_of", "targetAnchor": {"canonicalName": "...", "anchorType": "..."}}],
 "confidence": 0.7-0.95}

durable_fact (lasting truths) uses upsert_document; evidence (dated events, trips, one-off plans,
expiring in 30 days) and trace use append_record.

When sessionAudience is "team", every teammate reads these memories: propose only what the team
decided, builds, uses or completed (subjectKind "project"), never what one speaker says of their own
health, tastes, home or people (subjectKind "user"); those belong in the speaker's personal session.

A lasting fact about the user that shapes how tasks in one domain are done (an airline membership,
a home airport, a dietary need, a preferred editor) also gets a profile facet naming that domain:
travel_profile, food_profile, work_profile, household_profile, pet_profile, personal_profile.
Facts sharing a profile facet are recalled together, so give one only to facts a task in that
domain would need."""


# How the rules say "we" of a speaker (person.third_person): in a team session that is the team.
_GROUP = "User and others"
_SPEAKERS = re.compile(r"\b(?:I|me|my|mine|myself|User|User's)\b")


def _the_team(proposal: Proposal) -> Proposal:
    """A team memory says "The team decided…", not "User and others decided…" (every teammate reads
    it, and "User" is whoever spoke)."""
    def said(text: str) -> str:
        # "User and others build…" -> "The team builds…" (the verb agrees with one team)
        text = re.sub(r"(?<![\w'])User and others' ",
                      lambda m: "The team's " if m.start() == 0 else "the team's ", text)  # "Our database…"
        return re.sub(r"(?<![\w'])User and others (\S+)",
                      lambda m: ("The team " if m.start() == 0 else "the team ") + conjugate(m.group(1)), text)
    anchor = said(proposal.anchor) if proposal.anchor else proposal.anchor
    if proposal.anchor_type == "topic" and anchor and anchor.startswith("User's "):
        anchor = "The team's " + anchor[len("User's "):]  # the rules' topic name: "User's tool: use Terraform"
    return replace(proposal, title=said(proposal.title), content=said(proposal.content), anchor=anchor)


def _days_anchored(proposal: Proposal, transcript: "Transcript") -> Proposal:
    """The proposal with its relative days anchored to the day its turn was said (when.anchored):
    "next Friday" learnt on 3 December is "next Friday (Friday 11 December 2026)" a week later too."""
    if standing(proposal.content):
        # a standing statement stays one: "Starting tomorrow I'm vegan." dated to a day would read as
        # an episode of that day (stance.standing_and_lasting), and lose what a task leans on
        return proposal
    said = dict(transcript.said_at)
    at = next((said[t] for t in proposal.turns if t in said), None)
    if at is None and transcript.said_at:
        at = transcript.said_at[-1][1]
    title, content = anchored(proposal.title, at), anchored(proposal.content, at)
    if (title, content) == (proposal.title, proposal.content):
        return proposal
    return replace(proposal, title=title[:MAX_TITLE_CHARS], content=content)


@dataclass(frozen=True)
class Transcript:
    session_id: str
    audience: str
    boundary: str
    trigger: str
    from_turn: int  # exclusive: the turns distilled so far
    through_turn: int
    text: str
    user_turns: tuple[tuple[int, str], ...]
    recalled: tuple[dict, ...]
    existing: tuple[dict, ...]
    last_seen: int = -1  # the session's newest turn when collected (later than through_turn: a window)
    said_at: tuple[tuple[int, int], ...] = ()  # (turn index, when it was said), for its relative days


@dataclass(frozen=True)
class RunResult:
    run_id: str
    session_id: str
    trigger: str
    status: str  # completed | stale | failed
    decided_by: str
    proposals: tuple[Proposal, ...] = ()
    checkpoint_ids: tuple[str, ...] = ()
    rejections: dict | None = None
    error: str | None = None


def idle_ms(settings) -> int:
    return max(10, int(settings["session.observer_idle_seconds"])) * 1000


def due(session: dict, last_turn: int, distilled: int, last_failed_at: int | None, failures: int,
        settings, now: int) -> str | None:
    """Why this session should be distilled now, or None (pure: tests call it directly)."""
    if session["audience"] == "public" or last_turn <= distilled:
        return None
    if last_failed_at is not None and now < last_failed_at + RETRY_BASE_MS * 2 ** max(0, failures - 1):
        return None
    idle_for = now - session["updated_at"]
    if session["status"] == "ended":
        return "end"
    if session["status"] == "passivated" or idle_for >= int(settings["session.idle_timeout_minutes"]) * 60_000:
        return "passivation"
    if idle_for >= idle_ms(settings):
        return "idle"
    every = int(settings["session.distill_every_turns"])
    if every > 0 and last_turn - distilled >= every:
        return "turns"
    return None


def _progress(conn: apsw.Connection, session_id: str) -> tuple[int, int | None, int]:
    """(turns distilled so far, time of the last failure if it is the latest run, failures in a row)."""
    distilled = scalar(conn, "SELECT MAX(through_turn) FROM observer_runs WHERE session_id=?"
                             " AND status='completed'", (session_id,)) or 0
    recent = rows(conn, "SELECT status, finished_at FROM observer_runs WHERE session_id=?"
                        " ORDER BY finished_at DESC, rowid DESC LIMIT 10", (session_id,))
    failures = 0
    for r in recent:
        if r["status"] != "failed":
            break
        failures += 1
    return distilled, (recent[0]["finished_at"] if failures else None), failures


class Observer:
    def __init__(self, engine, llm=None, on_queued=None):
        self.engine = engine
        self.llm = llm
        self.on_queued = on_queued  # called after proposals were queued (wakes the curation worker)
        self._running: set[str] = set()
        self._lock = threading.Lock()

    # -- scheduling ------------------------------------------------------------------------

    def due_sessions(self, now: int, limit: int = 50) -> list[tuple[str, str]]:
        if not self.engine.enabled:
            return []
        out = []
        with self.engine.db.snapshot() as conn:
            candidates = rows(
                conn,
                "SELECT s.*, (SELECT MAX(turn_index) FROM session_turns t WHERE t.session_id=s.session_id)"
                " AS last_turn FROM sessions s WHERE s.audience != 'public' AND EXISTS (SELECT 1 FROM"
                " session_turns t WHERE t.session_id=s.session_id AND t.turn_index > COALESCE((SELECT"
                " MAX(through_turn) FROM observer_runs r WHERE r.session_id=s.session_id AND"
                " r.status='completed'), 0)) ORDER BY s.updated_at LIMIT ?", (limit,))
            for s in candidates:
                distilled, failed_at, failures = _progress(conn, s["session_id"])
                if self.llm is None:  # the rules do not fail: an LLM's failures leave no wait behind
                    failed_at, failures = None, 0
                why = due(s, s["last_turn"] or 0, distilled, failed_at, failures, self.engine.settings, now)
                if why:
                    out.append((s["session_id"], why))
        return out

    # -- one run -----------------------------------------------------------------------------

    def collect(self, session_id: str, trigger: str, now: int, *, window: bool = True) -> Transcript | None:
        """The turns not yet distilled. With `window` (a model reads them) as many of the oldest as
        fit MAX_TRANSCRIPT_CHARS; without (the rules read them), all of them."""
        with self.engine.db.snapshot() as conn:
            session = session_store.session_row(conn, session_id)
            distilled, _, _ = _progress(conn, session_id)
            turns = rows(conn, "SELECT * FROM session_turns WHERE session_id=? AND turn_index>?"
                               " ORDER BY turn_index", (session_id, distilled))
            if not turns:
                return None
            scope = session_store.scope_of(session)
            recalled_ids = []
            for t in turns:
                recalled_ids += [i for i in json.loads(t["recalled_ids_json"]) if i not in recalled_ids]
            recalled = [{"id": r["id"], "title": r["title"], "body": r["body"]} for r in
                        search.hydrate_visible(conn, scope, recalled_ids, now,
                                               include_expired=True, include_trace=True).values()]
            existing = []
            for r in rows(conn, "SELECT accepted_json FROM observer_runs WHERE session_id=? AND"
                                " status='completed' ORDER BY finished_at", (session_id,)):
                existing += json.loads(r["accepted_json"])
        recalled_lines = [f"[recalled-memory] {r['title']}: {r['body'][:400]}" for r in recalled]
        # The oldest turns not yet distilled, as many as fit: the run covers exactly those, and the
        # rest are the next run's (a session is due while turns remain). Cutting the oldest away
        # instead would mark them distilled unread: a fact said before five long code replies lost.
        whole = not window
        lines, taken, size = [], [], 0
        for t in turns:
            part = [f"[turn {t['turn_index']}]"]
            if t["user_text"]:
                part.append(f"[user] {t['user_text']}")
            if t["assistant_text"]:
                part.append(f"[assistant] {t['assistant_text']}")
            part += [f"[tool] {name}" for name in json.loads(t["tools_json"])]
            part += [f"[loaded-skill] {name}" for name in json.loads(t["skills_json"])]
            line = "\n".join(part)
            if taken and size + len(line) + 1 > MAX_TRANSCRIPT_CHARS:
                if whole:  # the rules read every turn; the text is only what a model would be sent
                    taken += [u for u in turns if u["turn_index"] > taken[-1]["turn_index"]]
                break
            if not taken and len(line) > MAX_TRANSCRIPT_CHARS:
                line = line[:MAX_TRANSCRIPT_CHARS]  # one turn alone too long: its start, the user's words first
            lines.append(line)
            taken.append(t)
            size += len(line) + 1
        text = "\n".join([*recalled_lines, *lines])
        return Transcript(session_id, session["audience"], session["boundary"], trigger, distilled,
                          taken[-1]["turn_index"], text,
                          tuple((t["turn_index"], t["user_text"]) for t in taken if t["user_text"]),
                          tuple(recalled), tuple(existing[-20:]), turns[-1]["turn_index"],
                          tuple((t["turn_index"], t["created_at"]) for t in taken))

    def propose(self, transcript: Transcript, use_llm: bool) -> tuple[list[Proposal], dict, str, str | None]:
        """(proposals, rejections, decided_by, response sha256); raises LlmError."""
        if use_llm and self.llm is not None:
            payload = {"sessionId": transcript.session_id, "sessionAudience": transcript.audience,
                       "turnCount": transcript.through_turn, "existingProposals": list(transcript.existing),
                       "transcript": transcript.text}
            reply = self.llm.complete(SYSTEM, json.dumps(payload, ensure_ascii=False), purpose="observer")
            parsed = first_json_object(reply.text)
            if parsed is None or not isinstance(parsed.get("proposals"), list):
                raise self.llm.record_failure("observer", "parse", "no JSON object with proposals in the reply: "
                                              f"{reply.text[:200]!r}")
            # 3 a run (netclaw's cap: the model consolidates), or one a user turn when a run holds
            # more: five facts said in five turns are five memories, not three and two lost
            result = gate(parsed["proposals"], max(MAX_PROPOSALS, len(transcript.user_turns)))
            accepted = [replace(p, turns=said_in(p, transcript.user_turns)) for p in result.accepted]
            rejections = dict(result.rejections)
            if transcript.audience == "team":
                # as the rules keep it (below), whatever the model did with the prompt's rule: a
                # speaker's own preference said in a team session became every teammate's (a walk)
                mine = [p for p in accepted if (p.subject_kind or "").lower() == "user"]
                if mine:
                    rejections["about-the-speaker-in-a-team-session"] = len(mine)
                    accepted = [p for p in accepted if p not in mine]
            return accepted, rejections, f"model:{reply.model}", reply.sha256
        # First-person standing statements only where "I" can only be the store's owner.
        found = extractor.extract(list(transcript.user_turns), own_words=transcript.audience == "personal",
                                  group=_GROUP if transcript.audience == "team" else None)
        dropped = {}
        if transcript.audience == "team":
            # A team store is read by every teammate, and the rules cannot say who "I" is: what the
            # speaker says of their own health, tastes, home or kin is theirs, not the team's (the
            # LLM observer's prompt says the same). What the team decided or builds is kept.
            personal = [p for p in found if p.facets[:1] and p.facets[0] not in extractor.TEAM_KINDS
                        # "We use Postgres…", "We're not moving to Dagster after all…"
                        and not (p.facets[0] in ("tool", "change") and p.content.startswith(_GROUP))
                        # a convention: "Never merge to main without two approvals." ("…my JavaScript" is mine)
                        and not (p.facets[0] == "instruction" and not _SPEAKERS.search(p.content))]
            if personal:
                dropped["about-the-speaker-in-a-team-session"] = len(personal)
                found = [p for p in found if p not in personal]
            found = [_the_team(p) for p in found]
        kept = per_turn(found, MAX_PROPOSALS)
        if len(found) > len(kept):
            dropped["max-proposals-exceeded"] = len(found) - len(kept)
        return kept, dropped, "rule", None

    def distill(self, session_id: str, now: int, trigger: str = "manual") -> RunResult | None:
        """Run once for this session (skipped when a run is already in flight)."""
        with self._lock:
            if session_id in self._running:
                return None
            self._running.add(session_id)
        try:
            return self._distill(session_id, now, trigger)
        finally:
            with self._lock:
                self._running.discard(session_id)

    def _distill(self, session_id: str, now: int, trigger: str) -> RunResult | None:
        with self.engine.db.snapshot() as conn:
            _, _, failures = _progress(conn, session_id)
        use_llm = self.llm is not None and failures < LLM_FAILURES_BEFORE_RULES
        transcript = self.collect(session_id, trigger, now, window=use_llm)
        if transcript is None:
            return None
        run_id = uuid.uuid4().hex
        try:
            proposals, rejections, decided_by, sha = self.propose(transcript, use_llm)
        except LlmError as exc:
            self.engine.write(_record_run, run_id, transcript, "failed", f"model:{self.llm.model_id}",
                              None, [], {}, str(exc)[:500], now)
            if not (exc.lasting or failures + 1 >= LLM_FAILURES_BEFORE_RULES):
                return RunResult(run_id, session_id, trigger, "failed", f"model:{self.llm.model_id}",
                                 error=str(exc))
            # The provider refused the request as sent (asking again gets the same answer), or this
            # was the last try: the rules distil these turns now, so they are never left undistilled
            # (the failed run stays on record for the doctor; the next run asks the LLM again).
            log.warning("session_distillation_by_rules session=%s after=%s", session_id, exc.kind)
            run_id = uuid.uuid4().hex
            proposals, rejections, decided_by, sha = self.propose(transcript, False)
        if decided_by != "rule" and not proposals and rejections:
            # The model proposed something, but none of it was usable (a small model leaving out the
            # retrieval metadata): the rules distil these turns rather than none of them being learnt.
            log.warning("session_distillation_by_rules session=%s after=unusable_proposals %s", session_id,
                        json.dumps(rejections))
            proposals, more, decided_by, sha = self.propose(transcript, False)
            rejections = {**{f"model:{k}": v for k, v in rejections.items()}, **more}
        proposals = _drop_known([_days_anchored(p, transcript) for p in proposals], transcript)
        review_on = bool(self.engine.settings.get("memory.curation.review", False))
        result = self.engine.write(_commit, run_id, transcript, proposals, rejections, decided_by, sha, now,
                                   review_on)
        if result.checkpoint_ids and self.on_queued is not None:
            self.on_queued()
        # queued is what curation will see: a proposal holding a secret is proposed but never queued
        # (the log said proposals=3 of three passwords, none of which went anywhere)
        log.info("session_distillation_completed session=%s trigger=%s status=%s proposals=%d queued=%d"
                 " blocked_as_secret=%d", session_id, trigger, result.status, len(result.proposals),
                 len(result.checkpoint_ids), len(result.proposals) - len(result.checkpoint_ids)
                 if result.status == "completed" else 0)
        return result


def said_in(proposal: Proposal, user_turns) -> tuple[int, ...]:
    """The user turn a model's proposal was most likely distilled from (the model names none): the
    one sharing the most of its content words, the later on a tie; () when none shares any. It is
    the memory's provenance ("where it came from") and the order the run queues proposals in."""
    words = mergeguard.content_words(proposal.content)
    best, turn = 0, None
    for index, text in user_turns:
        shared = len(words & mergeguard.content_words(text))
        if shared and shared >= best:
            best, turn = shared, index
    return (turn,) if turn is not None else ()


def per_turn(proposals: list[Proposal], limit: int) -> list[Proposal]:
    """At most `limit` proposals per user turn, the most confident first.

    The rules make one proposal per statement and cannot consolidate, so a run over five turns in
    which the user stated five preferences would otherwise keep three and lose two for good (the
    turns are marked distilled). The LLM path keeps its limit per run: it consolidates.
    """
    counts: dict[int, int] = {}
    out = []
    for p in proposals:
        turn = p.turns[0] if p.turns else -1
        if counts.get(turn, 0) < limit:
            counts[turn] = counts.get(turn, 0) + 1
            out.append(p)
    return out


def _drop_known(proposals: list[Proposal], transcript: Transcript) -> list[Proposal]:
    """Proposals that restate a recalled memory or an earlier accepted proposal are dropped: the
    same text, or one a recalled memory already says whole (mergeguard.contains_statement). Sharing
    most words is not enough: "I no longer use Neovim…" and "…, Zig, Haskell and OCaml." share
    nearly all of theirs with the memory they correct or extend, and go to curation."""
    known = {fingerprint(r["body"]) for r in transcript.recalled}
    known |= {fingerprint(e.get("content", "")) for e in transcript.existing}
    return [p for p in proposals
            if fingerprint(p.content) not in known
            and not any(mergeguard.contains_statement(r["body"], p.content) for r in transcript.recalled)]


def _record_run(conn, run_id, transcript: Transcript, status, decided_by, sha, accepted, rejections,
                error, now) -> None:
    conn.execute(
        "INSERT INTO observer_runs(run_id, session_id, trigger, from_turn, through_turn, status, decided_by,"
        " prompt_version, response_sha256, accepted_json, rejections_json, error, started_at, finished_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (run_id, transcript.session_id, transcript.trigger, transcript.from_turn, transcript.through_turn,
         status, decided_by, PROMPT_VERSION if decided_by != "rule" else None, sha,
         json.dumps(accepted), json.dumps(rejections or {}), redact(error)[0] if error else None, now, now))


def _commit(conn, run_id: str, transcript: Transcript, proposals: list[Proposal], rejections: dict,
            decided_by: str, sha: str | None, now: int, review_on: bool = False) -> RunResult:
    """Queue the proposals and record the run, unless newer turns made it stale; with review on,
    they wait for a person (review.py)."""
    latest = scalar(conn, "SELECT MAX(turn_index) FROM session_turns WHERE session_id=?",
                    (transcript.session_id,)) or 0
    if latest > max(transcript.through_turn, transcript.last_seen):
        _record_run(conn, run_id, transcript, "stale", decided_by, sha, [], rejections, None, now)
        return RunResult(run_id, transcript.session_id, transcript.trigger, "stale", decided_by)
    ids, accepted = [], []
    # Queued in the order they were said (curation takes them in queue order, and the newest said
    # must land last: "…lives in Lisbon." then "…moved to Porto."), the most confident first within
    # a turn; review lists them in this order too.
    for p in sorted(proposals, key=lambda p: p.turns[0] if p.turns else 0):
        queued = checkpoints.enqueue(
            conn, trigger="observed-memory-proposals",
            payload={"proposal": p.to_payload(), "source": "observer",
                     "provenance": {"session_id": transcript.session_id, "turns": list(p.turns),
                                    "external": []}},
            audience=transcript.audience, boundary=transcript.boundary,
            session_id=transcript.session_id, now=now,
            review=review.waits_for_review(conn, review_on, review.OBSERVED, p.content, transcript.audience,
                                           transcript.boundary))
        if queued.checkpoint_id:
            ids.append(queued.checkpoint_id)
            accepted.append({"anchor": p.anchor, "title": p.title, "content": p.content})
    _record_run(conn, run_id, transcript, "completed", decided_by, sha, accepted, rejections, None, now)
    session = one(conn, "SELECT status FROM sessions WHERE session_id=?", (transcript.session_id,))
    if transcript.trigger == "passivation" and session and session["status"] == "open":
        conn.execute("UPDATE sessions SET status='passivated' WHERE session_id=?", (transcript.session_id,))
    return RunResult(run_id, transcript.session_id, transcript.trigger, "completed", decided_by,
                     tuple(proposals), tuple(ids), rejections)
