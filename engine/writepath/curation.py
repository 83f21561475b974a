"""Curation: decide what a checkpoint's proposal becomes, then write it in one transaction.

`plan` runs outside the writer (reads, embedding, the curator LLM) and returns a Decision;
`apply` runs on the writer thread: it checks the lease is still held and the targets have not
changed since planning, writes the memories through `store.insert_memory` / `store.revise_document`,
appends the curation_events row and completes the checkpoint — all in one transaction.

Rules first (netclaw-facts §4): empty, ephemeral, secret, policy, tombstone, fingerprint dedup.
Records (evidence, trace) are created. A durable fact that a living document of its scope already
says word for word (found by full text, or among its nominees) is skipped as `contained`; no
model is needed to see that it adds nothing. Otherwise it looks for the living document of its anchor
and for nominees (cosine >= 0.86, at most 5, via engine.models); no candidate -> create without an
LLM call. With candidates the curator LLM chooses; a merged body must pass the merge guard or the
proposal is appended under a dated separator. Without an LLM nothing is merged destructively:
same anchor -> append, similar only -> create. A curator that is down or overloaded gets the same
conservative decision after the last attempt; one that refuses the requests (HTTP 4xx: a wrong
model name, a missing key) dead-letters the checkpoint instead, visibly, to be retried once fixed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

import apsw

from .. import graph_edit, store
from ..db import one, rows, secure_delete
from ..erasing import erase_observer_runs, hunted_in
from ..filing import follow_anchor, refile
from ..memory import Provenance, aliases_after, normalize_text, title_follows
from ..policy import Scope
from ..secretfilter import MARKER, secret_kinds
from ..stance import WHAT_SOMEONE_IS, current_part, negated
from . import checkpoints, curator, mergeguard, similarity
from .checkpoints import Lease
from .entities import EXCLUSIVE, USER, introduced_by_tie, kin, renamed
from .events import RULE, record_event
from .llm import LlmError
from .proposals import Proposal

# Words that say nothing to remember, whatever their number: "ok thanks", "lol", "yeah sure thx".
CHATTER_WORDS = frozenset({"ok", "okay", "k", "kk", "thanks", "thank", "you", "thx", "ty", "np", "sounds", "good",
                           "got", "it", "cool", "great", "nice", "yes", "yeah", "yep", "yup", "no", "nope", "sure",
                           "done", "hi", "hello", "hey", "bye", "lol", "lmao", "haha", "hah", "hehe", "hmm", "oh",
                           "ah", "wow", "awesome", "perfect", "alright", "fine", "and", "so", "very", "much", "a",
                           "lot", "bunch", "again", "all", "right", "then", "please", "noted", "understood"})


def says_nothing(content: str) -> bool:
    """Chatter, or no text at all: only CHATTER_WORDS ("ok thanks", "lol"), or fewer than three
    different letters and digits however long ("x" said 99,990 times, "haha", "?!"). A walk's
    store_memory kept "ok thanks", "lol" and the long x as durable facts."""
    words = normalize_text(content).split()
    if not words or all(word in CHATTER_WORDS for word in words):
        return True
    return len({c.lower() for c in content if c.isalnum()}) < 3
MIN_CONFIDENCE = 0.55
SOURCES_BY_TRIGGER = {"explicit-memory-request": "tool", "compaction-boundary": "compaction",
                      "subagent-findings": "subagent", "observed-memory-proposals": "observer",
                      "markdown-import": "import"}


class TransientFailure(Exception):
    """Retry later (the LLM timed out, a target changed while we were deciding)."""


class PermanentFailure(Exception):
    """Retrying cannot help (a malformed payload): dead-letter now, with this reason."""


@dataclass(frozen=True)
class Decision:
    action: str  # create | update | consolidate | append | skip | drop | blocked
    reason: str
    decided_by: str = RULE
    targets: tuple[str, ...] = ()
    body: str | None = None
    prompt_version: str | None = None
    response_sha256: str | None = None
    detail: dict = field(default_factory=dict)
    revisions: tuple[tuple[str, int], ...] = ()  # targets' revisions when planned
    # The proposal's passage vector (when one was computed), so the memory it creates is not embedded twice.
    vector: object = field(default=None, repr=False, compare=False)
    model_id: str | None = None


@dataclass(frozen=True)
class Applied:
    checkpoint_id: str
    action: str
    reason: str
    memory_ids: tuple[str, ...]
    scrubbed: bool = False  # its proposal's text was scrubbed: the WAL's old copies go too (worker)


def parse_payload(lease: Lease) -> tuple[Proposal, dict]:
    try:
        payload = json.loads(lease.payload_json)
        if "scrubbed" in payload:
            raise PermanentFailure(f"payload was scrubbed ({payload['scrubbed']})")
        return Proposal.from_payload(payload["proposal"]), payload
    except PermanentFailure:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise PermanentFailure(f"malformed checkpoint payload ({type(exc).__name__}: {exc})") from None


# -- planning (no writes) ---------------------------------------------------------------------


def rule_verdict(conn: apsw.Connection, lease: Lease, proposal: Proposal) -> Decision | None:
    """The rules that settle a proposal before any similarity or model is consulted."""
    content = proposal.content.strip()
    if not content:
        return Decision("drop", "empty")
    if says_nothing(content):
        return Decision("drop", "ephemeral")  # "ok", "thanks", or a stray "x": nothing to remember
    kinds = secret_kinds("\n".join((proposal.title, content, *proposal.aliases, *proposal.facets)))
    if kinds or MARKER in content or MARKER in proposal.title:
        return Decision("blocked", "secret", detail={"kinds": kinds or ["redacted_upstream"]})
    if lease.audience == "public":
        return Decision("drop", "policy", detail={"why": "public sessions form no memories"})
    if proposal.confidence < MIN_CONFIDENCE and not proposal.explicit:
        return Decision("drop", "low_confidence", detail={"confidence": proposal.confidence})
    tombstone = store.tombstone_of(conn, content, lease.audience, lease.boundary)
    if tombstone is not None:  # names the deleted memory, as the near-tombstone skip does
        return Decision("skip", "tombstone", targets=(tombstone["memory_id"],) if tombstone["memory_id"] else ())
    duplicate = store.find_fingerprint(conn, content, lease.audience, lease.boundary)
    if duplicate:
        return Decision("skip", "duplicate", targets=(duplicate,))
    return None


def anchor_document(conn: apsw.Connection, lease: Lease, anchor: str | None) -> dict | None:
    """The living document of this anchor in exactly this scope, if there is one."""
    normalized = normalize_text(anchor or "")
    if not normalized:
        return None
    return one(
        conn,
        "SELECT d.document_id AS id, d.title, d.body, d.revision, d.updated_at, a.canonical_name AS anchor"
        " FROM memory_documents d JOIN memory_anchors a ON a.anchor_id = d.anchor_id"
        " WHERE a.audience=? AND a.boundary=? AND a.normalized_name=? AND d.deleted_at IS NULL"
        " AND d.memory_class='durable_fact' AND d.audience=? AND d.boundary=?"
        " ORDER BY d.updated_at DESC LIMIT 1",
        (lease.audience, lease.boundary, normalized, lease.audience, lease.boundary))


def value_document(conn: apsw.Connection, lease: Lease, proposal: Proposal) -> dict | None:
    """The living document that says the value one of the proposal's one-value relations replaces
    (lives_in, works_at, home_airport, from): it asserted the open edge from the same anchor with the
    same relation to another target, in exactly this scope. "User moved to Berlin last month." then
    goes into "User lives in Lisbon." as anchor_document's "Anna moved to Porto." goes into Anna's:
    two live memories had answered "Where do I live?" with the old home (a walk), though the graph
    had closed it. Columns as anchor_document's."""
    for rel in proposal.relations:
        source = normalize_text(rel.source or proposal.anchor or "")
        if not rel.exclusive or not source:
            continue
        found = one(
            conn,
            "SELECT d.document_id AS id, d.title, d.body, d.revision, d.updated_at, a.canonical_name AS anchor"
            " FROM memory_anchors s JOIN memory_edges e ON e.from_anchor_id = s.anchor_id"
            " JOIN memory_anchors t ON t.anchor_id = e.to_anchor_id"
            " JOIN memory_documents d ON d.document_id = e.asserted_by"
            " LEFT JOIN memory_anchors a ON a.anchor_id = d.anchor_id"
            " WHERE s.audience=? AND s.boundary=? AND s.normalized_name=? AND e.relation=? AND e.valid_to IS NULL"
            " AND t.normalized_name != ? AND d.deleted_at IS NULL AND d.memory_class='durable_fact'"
            " AND d.audience=? AND d.boundary=? ORDER BY e.valid_from DESC LIMIT 1",
            (lease.audience, lease.boundary, source, rel.relation, normalize_text(rel.target),
             lease.audience, lease.boundary))
        if found is not None:
            return found
    return None


# A statement that a standing fact no longer holds, and what it was: "I'm not vegetarian anymore",
# "I'm pescatarian now, not vegetarian", "I no longer use Neovim", "I stopped drinking coffee",
# "I switched from Vim to Emacs". A plain negation ("I don't like coffee") says no change.
_CHANGED = re.compile(r"\b(?:no\s+longer|stopped|quit|gave\s+up|switched\s+(?:away\s+)?from|instead\s+of|"
                      r"moved\s+on\s+from|not|isn't|wasn't)\s+(?:an?\s+|the\s+|my\s+)?"
                      r"(?P<what>[\w'-]+(?:\s+[\w'-]+){0,3})", re.I)
# A condition put right says a change too: "I'm not allergic to shellfish, I just don't like prawns."
_CHANGE_SAID = re.compile(r"\b(?:anymore|any\s+more|no\s+longer|now|stopped|quit|gave\s+up|switched|instead\s+of|"
                          r"moved\s+on|after\s+all|isn't|wasn't)\b|(?:'m|\bam|'re|\bare)\s+not\s+(?:\w+ly\s+)?"
                          r"(?:[\w-]+\s+)?" + WHAT_SOMEONE_IS + r"\b", re.I)
# "allergic to shellfish" is shellfish (the "to" of "from Vim to Emacs" ends what changed)
_ALLERGIC_TO = re.compile(r"^((?:[\w-]+\s+)?(?:allergic|intolerant|sensitive))\s+to\s+", re.I)
# The move a called-off plan names, before what it named: "not moving to Dagster after all" is Dagster.
_MOVING_TO = re.compile(r"^(?:moving|switching|migrating|changing|going|porting)\s+(?:[\w'-]+\s+){0,2}?"
                        r"(?:over\s+)?(?:to|onto)\s+", re.I)
_WHAT_ENDS = re.compile(r"\s*(?:,|\.|;|!|\band\b|\bbut\b|\bnow\b|\banymore\b|\bany\s+more\b|\bto\b|"
                        r"\bafter\s+all\b).*$", re.I)
# Words of the retracted phrase that name no thing: its verb ("use Neovim": Neovim).
_NOT_THE_THING = {"use", "uses", "using", "eat", "eats", "eating", "drink", "drinks", "drinking", "live", "lives",
                  "living", "work", "works", "working", "play", "plays", "playing", "have", "has", "like", "likes",
                  "love", "loves", "do", "does", "doing", "go", "goes", "going", "take", "takes", "taking", "being",
                  "a", "an", "the", "my", "any", "more", "for", "with", "from", "in", "at", "on", "of", "be", "after"}


def retracted(content: str) -> tuple[str, ...]:
    """The words naming what a change statement says no longer holds (() when it says no change)."""
    if not _CHANGE_SAID.search(content or ""):
        return ()
    for found in _CHANGED.finditer(content):
        what = _WHAT_ENDS.sub("", _ALLERGIC_TO.sub(r"\1 ", _MOVING_TO.sub("", found.group("what"))))
        words = tuple(w for w in re.findall(r"[a-z0-9][\w'+#-]*", what.lower()) if w not in _NOT_THE_THING
                      and len(w) >= 2)
        if words:
            return words
    return ()


def replaced_document(conn: apsw.Connection, lease: Lease, proposal: Proposal) -> dict | None:
    """The living document of this scope whose current text states what the proposal says no longer
    holds ("I'm vegetarian." for "I'm not vegetarian anymore, I eat fish now."): the change goes
    into it, newest first, as a move goes into the memory of the old home. Beside it, the old
    statement stood as a memory of its own, and recall injected "I'm vegetarian." to dinner tasks
    (a walk). Columns as anchor_document's."""
    words = retracted(proposal.content)
    if not words:
        return None
    for row in rows(conn, "SELECT d.document_id AS id, d.title, d.body, d.revision, d.updated_at,"
                          " a.canonical_name AS anchor FROM memory_documents d"
                          " LEFT JOIN memory_anchors a ON a.anchor_id = d.anchor_id"
                          " WHERE d.audience=? AND d.boundary=? AND d.deleted_at IS NULL"
                          " AND d.memory_class='durable_fact' AND instr(lower(d.body), ?) > 0"
                          " ORDER BY d.updated_at DESC LIMIT 50", (lease.audience, lease.boundary, words[0])):
        now = current_part(row["body"]).lower()
        if all(re.search(r"(?<![\w])" + re.escape(w) + r"(?![\w])", now) for w in words) and not negated(now):
            return row
    return None


def resolve_kin(conn: apsw.Connection, lease: Lease, proposal: Proposal) -> Proposal:
    """Someone the proposal knows only by role ("my sister lives in Porto": `User's sister`) is the
    one person the user has already named in that role in this scope (Anna, the user's sister), so
    the move is Anna's and closes her old `lives_in` edge. Two sisters, or none named yet: the role's
    own anchor stays (entities.kin)."""
    subject = proposal.subject or USER
    found: dict[str, str] = {}
    for rel in proposal.relations:
        if rel.source != subject or rel.target != kin(rel.relation, subject) or rel.target in found:
            continue
        named = conn.execute(
            "SELECT DISTINCT t.canonical_name FROM memory_edges e"
            " JOIN memory_anchors s ON s.anchor_id = e.from_anchor_id"
            " JOIN memory_anchors t ON t.anchor_id = e.to_anchor_id"
            " WHERE s.audience=? AND s.boundary=? AND s.normalized_name=? AND e.relation=?"
            " AND e.valid_to IS NULL AND t.anchor_type='person' AND t.normalized_name != ?",
            (lease.audience, lease.boundary, normalize_text(subject), rel.relation,
             normalize_text(rel.target))).fetchall()
        if len(named) == 1:
            found[rel.target] = named[0][0]
    return _with_names(proposal, found)


def _with_names(proposal: Proposal, names: dict[str, str]) -> Proposal:
    """The proposal with each name in `names` replaced by its value, in its anchor and relations."""
    if not names:
        return proposal
    name = lambda n: names.get(n, n)  # noqa: E731
    return replace(proposal, anchor=name(proposal.anchor) if proposal.anchor else proposal.anchor,
                   relations=tuple(replace(r, target=name(r.target), source=r.source and name(r.source))
                                   for r in proposal.relations))


# Family ties one person cannot hold together: a sister is not also a daughter, a wife not a mother.
# (A friend or a colleague can be family too: "my sister is my best friend".)
_KIN_GROUPS = [frozenset(g) for g in (
    ("wife", "husband", "partner", "girlfriend", "boyfriend", "fiance", "fiancee", "spouse"),
    ("mother", "mom", "mum", "father", "dad", "stepmother", "stepfather"),
    ("sister", "brother"), ("son", "daughter", "kid", "child", "baby", "stepson", "stepdaughter"),
    ("grandmother", "grandma", "grandfather", "grandpa"), ("aunt", "uncle"), ("niece", "nephew"), ("cousin",))]


# Ties outside the family. A sister can be a best friend ("Anna is my best friend."), but one
# introduces one's wife as "my wife", not as "my friend Marta".
_SOCIAL = frozenset({"friend", "best_friend", "roommate", "flatmate", "neighbor", "neighbour", "boss", "manager",
                     "colleague", "coworker", "co_worker", "mentor", "coach", "teacher", "doctor", "dentist",
                     "therapist", "landlord"})


def _kin_group(relation: str) -> frozenset | None:
    return next((g for g in _KIN_GROUPS if relation in g), None)


def _another_person(relation: str, ties: set[str], content: str, name: str) -> bool:
    """Whether a tie to `name` said now names someone else than the one holding `ties`: a family tie
    no one holds with those ("my daughter Anna" of the sister), or someone introduced by a tie outside
    the family ("my friend Marta") of the one who is family."""
    group = _kin_group(relation)
    if group is not None:
        return any(_kin_group(t) not in (None, group) for t in ties)
    return relation in _SOCIAL and any(_kin_group(t) for t in ties) and introduced_by_tie(content, relation, name)


def tell_apart(conn: apsw.Connection, lease: Lease, proposal: Proposal) -> Proposal:
    """Two people of one name: "My daughter Anna starts school." after "My sister Anna lives in
    Lisbon." is not the sister, nor is "my friend Marta" the wife Marta. A name the user already
    holds in one family tie, said in a tie that names someone else (_another_person), is another
    person, filed as "Anna (daughter)", "Marta (friend)" (the two were one anchor, with both edges
    and every fact of both)."""
    subject = proposal.subject or USER
    renamed_to: dict[str, str] = {}
    for rel in proposal.relations:
        if (_kin_group(rel.relation) is None and rel.relation not in _SOCIAL) or rel.source != subject \
                or rel.target in renamed_to or rel.target == kin(rel.relation, subject):
            continue
        ties = {r for (r,) in conn.execute(
            "SELECT DISTINCT e.relation FROM memory_edges e JOIN memory_anchors s ON s.anchor_id = e.from_anchor_id"
            " JOIN memory_anchors t ON t.anchor_id = e.to_anchor_id WHERE t.audience=? AND t.boundary=?"
            " AND t.normalized_name=? AND t.anchor_type='person' AND t.status='active' AND s.normalized_name=?"
            " AND e.valid_to IS NULL", (lease.audience, lease.boundary, normalize_text(rel.target),
                                        normalize_text(subject)))}
        if _another_person(rel.relation, ties, proposal.content, rel.target):
            renamed_to[rel.target] = f"{rel.target} ({rel.relation.replace('_', ' ')})"
    return _with_names(proposal, renamed_to)


def plan(engine, llm, lease: Lease, now: int, max_attempts: int) -> tuple[Proposal, Decision]:
    """Decide (reads and model calls only); raises TransientFailure / PermanentFailure."""
    proposal, _payload = parse_payload(lease)
    with engine.db.snapshot() as conn:
        proposal = tell_apart(conn, lease, resolve_kin(conn, lease, proposal))
        verdict = rule_verdict(conn, lease, proposal)
        if verdict is None and (deleted := similarity.tombstone_said(conn, lease, proposal.content)):
            verdict = Decision("skip", "tombstone", targets=(deleted,), detail={"says_the_deleted_claim": True})
        if verdict is None and proposal.memory_class == "durable_fact":
            said = similarity.already_said(conn, lease, proposal.content, now)
            verdict = Decision("skip", "contained", targets=(said,)) if said is not None else None
    if verdict is not None:  # settled by the rules: no embedding needed
        return proposal, verdict
    embedded = similarity.embed_proposal(engine, proposal)
    keep = {"vector": embedded.vector, "model_id": embedded.model_id}  # reused for the memory it creates
    with engine.db.snapshot() as conn:
        near = similarity.tombstone_near(engine, conn, lease, embedded, proposal.content)
        if near is not None:
            return proposal, Decision("skip", "tombstone", targets=(near[0],),
                                      detail={"tombstone_cosine": round(near[1], 4)})
        if proposal.memory_class != "durable_fact":
            return proposal, Decision("create", "record", **keep)
        same_anchor = (anchor_document(conn, lease, proposal.anchor) or value_document(conn, lease, proposal)
                       or replaced_document(conn, lease, proposal))
        nominees, info = similarity.nominate(engine, conn, lease, proposal, now, embedded,
                                             allow_lexical=llm is not None)
    for nominee in nominees:  # a near match (by meaning) that already says all of it
        if mergeguard.contains_statement(nominee["body"], proposal.content):
            return proposal, Decision("skip", "contained", targets=(nominee["id"],),
                                      detail={**info, "cosine": nominee["cosine"]})
    candidates = ([same_anchor] if same_anchor else []) + [n for n in nominees
                                                            if not same_anchor or n["id"] != same_anchor["id"]]
    revisions = tuple((c["id"], c["revision"]) for c in candidates)
    if not candidates:
        return proposal, Decision("create", "no_nominee", detail=info, **keep)
    if llm is None:
        kept = _conservative(proposal, same_anchor, revisions, "no_llm", info)
        return proposal, replace(kept, **keep) if kept.action == "create" else kept
    prompt = curator.build_prompt(proposal.title, proposal.content, proposal.anchor, now, candidates)
    try:
        reply = llm.complete(curator.SYSTEM, prompt, purpose="curation")
    except LlmError as exc:
        if refused(exc):  # asked again, it answers the same: dead-lettered at once, for a person to fix
            raise PermanentFailure(f"curator LLM {exc}: the provider refuses these requests (check "
                                   "memory.llm.base_url, memory.llm.model and the API key), then retry it") from None
        if lease.attempts < max_attempts:
            raise TransientFailure(f"curator LLM {exc}") from None
        return proposal, _conservative(proposal, same_anchor, revisions, "llm_failed",
                                       {**info, "llm_error": str(exc)[:300]})
    by = f"model:{reply.model}"
    meta = dict(decided_by=by, prompt_version=curator.PROMPT_VERSION, response_sha256=reply.sha256)
    choice = curator.parse_choice(reply.text)
    if choice is None:
        # A reply with no decision is a failed call (counted: status stays degraded while the model
        # answers garbage), retried like one, and only the last try falls back to the rules.
        exc = llm.record_failure("curation", "parse", f"no decision in the reply: {reply.text[:200]!r}")
        if lease.attempts < max_attempts:
            raise TransientFailure(f"curator LLM {exc}") from None
        d = _conservative(proposal, same_anchor, revisions, "llm_no_decision", info)
        return proposal, replace(d, **meta)
    known = {c["id"]: c for c in candidates}
    if choice.action == "skip":
        unsaid = mergeguard.unsaid([c["body"] for c in candidates], proposal.content)
        if unsaid:  # the model would drop what no candidate holds: keep it, as without a model
            d = _conservative(proposal, same_anchor, revisions, "model_skip_unsaid",
                              {**info, "unsaid": list(unsaid[:20])})
            return proposal, replace(d, **meta)
        return proposal, Decision("skip", "model_skip", targets=tuple(known), revisions=revisions,
                                  detail=info, **meta)
    if choice.action == "create":
        if same_anchor:  # one living document per anchor: add to it, never a second copy
            d = _append(proposal, same_anchor, revisions, "model_create_same_anchor", info)
            return proposal, replace(d, **meta)
        return proposal, Decision("create", "model_create", detail=info, **meta)
    targets = [t for t in choice.targets if t in known]
    if choice.action == "update":
        targets = targets[:1]  # UPDATE names one memory: another id on its line is not consolidated away
    if not targets:
        d = (_append(proposal, same_anchor, revisions, "update_target_unknown", info) if same_anchor
             else Decision("create", "update_target_unknown", detail=info))
        return proposal, replace(d, **meta)
    primary = known[targets[0]]
    if choice.body is None:
        return proposal, replace(_append(proposal, primary, revisions, "merge_without_body", info), **meta)
    sources = [known[t]["body"] for t in targets] + [proposal.content]
    guard = mergeguard.check_merge(sources, choice.body)
    detail = {**info, "guard": {"retention": round(guard.retention, 3),
                                "length_ratio": round(guard.length_ratio, 3),
                                "missing": list(guard.missing[:20])}}
    if not guard.passed:
        return proposal, replace(_append(proposal, primary, revisions,
                                         f"merge_guard_failed: {guard.reason}", detail), **meta)
    action = "consolidate" if choice.action == "consolidate" and len(targets) > 1 else "update"
    return proposal, Decision(action, f"model_{choice.action}", targets=tuple(targets), body=choice.body,
                              revisions=revisions, detail=detail, **meta)


def refused(exc: LlmError) -> bool:
    """The provider answered that it will not serve the request (HTTP 4xx other than timeout and
    rate limit): a setting is wrong, so after the last attempt the checkpoint is dead-lettered for a
    person to see and retry, rather than decided without the model as when the provider is down."""
    match = re.match(r"HTTP (\d{3})", exc.message or "")
    return exc.kind == "http" and match is not None and 400 <= int(match.group(1)) < 500 \
        and int(match.group(1)) not in (408, 429)


# A living document is not appended to past this: half of recall's injection budget (2,000
# characters by default). Without an LLM to consolidate, a walk's every fact about the user's
# wife went into the document saying where the user lives; at 2,106 characters nothing of it was
# injected any more ("did not fit the injection budget"), home, wife and dog alike. What is said
# next begins a new document on the same anchor (and further appends go there: the newest).
FULL_DOCUMENT_CHARS = 1000


def _append(proposal: Proposal, target: dict, revisions, reason: str, info: dict) -> Decision:
    if mergeguard.contains_statement(target["body"], proposal.content):
        return Decision("skip", "already_in_document", targets=(target["id"],), revisions=revisions,
                        detail=info)
    body = mergeguard.append_body(target["body"], proposal.content, target["updated_at"])
    if len(body) > FULL_DOCUMENT_CHARS:
        return Decision("create", f"{reason}_document_full", revisions=revisions,
                        detail={**info, "full_document": target["id"], "would_be_chars": len(body)})
    return Decision("append", reason, targets=(target["id"],), body=body, revisions=revisions, detail=info)


def _conservative(proposal: Proposal, same_anchor: dict | None, revisions, why: str, info: dict) -> Decision:
    """No usable model decision: never merge destructively (append to the anchor's document, or create)."""
    if same_anchor:
        return _append(proposal, same_anchor, revisions, f"{why}_same_anchor_append", info)
    return Decision("create", f"{why}_nominee_create", detail=info)


# -- applying (one write transaction) ---------------------------------------------------------


def _draft(lease: Lease, proposal: Proposal, payload: dict) -> store.MemoryDraft:
    prov = Provenance.from_obj(payload.get("provenance"))
    external = (*prov.external, {"checkpoint": lease.checkpoint_id})
    prov = Provenance(prov.session_id or lease.session_id, tuple(prov.turns or proposal.turns), external)
    relations = _relations(proposal)
    source = payload.get("source") or SOURCES_BY_TRIGGER.get(lease.trigger, "observer")
    return store.validate_draft(store.MemoryDraft(
        title=proposal.title, body=proposal.content, memory_class=proposal.memory_class,
        audience=lease.audience, boundary=lease.boundary,
        author_audience=payload.get("author_audience") or lease.audience, source=source,
        session_id=lease.session_id, provenance=prov, authored_at=payload.get("authored_at"),
        aliases=proposal.aliases, facets=proposal.facets, anchor=proposal.anchor,
        anchor_type=proposal.anchor_type, relations=relations, confidence=proposal.confidence,
        recall_mode=payload.get("recall_mode") or proposal.recall_mode,
    ))


def _check_unchanged(conn: apsw.Connection, decision: Decision) -> dict[str, dict]:
    found = {}
    for memory_id, revision in decision.revisions:
        row = one(conn, "SELECT *, document_id AS id, 'document' AS kind FROM memory_documents"
                        " WHERE document_id=?", (memory_id,))
        if row is None or row["revision"] != revision or row["deleted_at"] is not None:
            raise TransientFailure(f"{memory_id} changed while curation was deciding; deciding again")
        found[memory_id] = row
    return found


def _relations(proposal: Proposal) -> tuple[store.Relation, ...]:
    return store_relations(proposal.relations)


def store_relations(specs) -> tuple[store.Relation, ...]:
    """A proposal's relations (RelationSpec) as the store asserts them."""
    return tuple(store.Relation(r.relation, r.target, r.target_type, exclusive=r.exclusive, source=r.source,
                                source_type=r.source_type) for r in specs)


def _assert_relations(conn, proposal: Proposal, row: dict, now: int) -> None:
    """The proposal's relations, asserted when it was merged into an existing document."""
    anchor_id = row["anchor_id"] or (store.upsert_anchor(conn, proposal.anchor or "", proposal.anchor_type,
                                                         row["audience"], row["boundary"], now)
                                     if proposal.anchor else None)
    store.assert_relations(conn, anchor_id, _relations(proposal), audience=row["audience"],
                           boundary=row["boundary"], asserted_by=row["document_id"], now=now,
                           confidence=proposal.confidence)


def _file_under_new_value(conn, proposal: Proposal, row: dict, now: int) -> dict:
    """A living document filed under the user's old value of a one-at-a-time tie (a place, an
    employer, an airport) moves to the new value the update just asserted: "I left Acme and joined
    Northwind Labs as a platform engineer." closed works_at Acme, and the job document stayed under
    Acme because its text still names it (filing.follow_anchor moves only what no longer names it)."""
    anchor = one(conn, "SELECT anchor_id, canonical_name, anchor_type FROM memory_anchors WHERE anchor_id=?",
                 (row["anchor_id"],))
    if anchor is None or anchor["anchor_type"] not in ("place", "organisation", "membership"):
        return row
    for r in proposal.relations:
        if r.relation not in EXCLUSIVE or (r.source or USER) != USER \
                or normalize_text(r.target) == normalize_text(anchor["canonical_name"]):
            continue
        closed_now = one(conn, "SELECT 1 AS x FROM memory_edges e JOIN memory_anchors s"
                               " ON s.anchor_id = e.from_anchor_id WHERE e.to_anchor_id=? AND e.relation=?"
                               " AND e.valid_to=? AND s.canonical_name=?", (anchor["anchor_id"], r.relation, now, USER))
        if closed_now is None:
            continue
        moved = store.upsert_anchor(conn, r.target, r.target_type, row["audience"], row["boundary"], now)
        if moved and moved != anchor["anchor_id"]:
            return refile(conn, row, row["document_id"], anchor["anchor_id"], moved)
    return row


def _erased_claim(conn: apsw.Connection, lease: Lease, proposal: Proposal) -> bool:
    """Was the proposal refused because its claim was erased for good? It then keeps no copy of it
    (apply): not in its checkpoint (scrubbed, as a secret's is), not in the observer run that
    proposed it, not in the file's freed space or the WAL (secure_delete, then the worker's
    truncate_wal)."""
    tomb = store.tombstone_of(conn, proposal.content, lease.audience, lease.boundary)
    return tomb is not None and tomb["erased_at"] is not None


def put_name_right(conn: apsw.Connection, lease: Lease, old: str, new: str, now: int) -> list[str]:
    """A name put right ("My sister's name is Ana, not Anna."): the anchor of the old name in the
    lease's scope takes the new one (the old stays its alias, graph_edit.rename) and the memories
    on it say the new name, each as a revision (a record: a successor) that history keeps. With no
    anchor of the old name (the rules named no one in "We have two kids, Maya and Leo."), the
    memories of the scope that say the old name alone (not "Maya Angelou") say the new one (a walk:
    "my daughter's name is Maia, not Maya" left "…two kids, Maya and Leo."). Nothing happens when an
    anchor already has the new name (a merge is a person's call). Returns the memories rewritten."""
    here = (lease.audience, lease.boundary)
    if one(conn, "SELECT 1 FROM memory_anchors WHERE audience=? AND boundary=? AND normalized_name=?",
           (*here, normalize_text(new))) is not None:
        return []
    anchor = one(conn, "SELECT anchor_id FROM memory_anchors WHERE audience=? AND boundary=? AND normalized_name=?"
                       " AND status='active'", (*here, normalize_text(old)))
    if anchor is not None:
        graph_edit.rename(conn, Scope(*here), anchor["anchor_id"], new, now)
        where, args = "m.anchor_id=?", (anchor["anchor_id"],)
        word = re.compile(rf"(?<![\w-]){re.escape(old)}(?![\w-])")
    else:
        where, args = "m.audience=? AND m.boundary=? AND instr(m.title || ' ' || m.body, ?) > 0", (*here, old)
        # the name alone: not after or before another capitalised word ("Maya Angelou")
        word = re.compile(rf"(?<![\w-])(?<![A-Z][a-z] )(?<![A-Z][a-z]{{2}} )(?<![A-Z][a-z]{{3}} )"
                          rf"{re.escape(old)}(?![\w-])(?!\s+[A-Z][a-z])")

    def said_anew(row: dict) -> tuple[str, str, str] | None:
        """(title, body, aliases) with the new name, or None when the memory does not say the old one."""
        if not (word.search(row["title"]) or word.search(row["body"])):
            return None
        title, body = word.sub(new, row["title"]), word.sub(new, row["body"])
        return title, body, aliases_after(row["aliases"] or "", f"{row['title']}\n{row['body']}", f"{title}\n{body}")

    out = []
    for doc in rows(conn, f"SELECT * FROM memory_documents m WHERE {where} AND m.deleted_at IS NULL LIMIT 200",
                    args):
        if (anew := said_anew(doc)) is not None:
            store.revise_document(conn, doc, anew[0], anew[1], now, source="observer",
                                  reason=f"curation:renamed {old} to {new}", aliases=anew[2])
            out.append(doc["document_id"])
    for rec in rows(conn, f"SELECT * FROM memory_records m WHERE {where} AND m.is_tombstone=0 AND NOT EXISTS"
                          " (SELECT 1 FROM memory_records n WHERE n.supersedes_record_id = m.record_id) LIMIT 200",
                    args):
        if (anew := said_anew(rec)) is not None:
            out.append(store.supersede_record(conn, {**rec, "aliases": anew[2]}, anew[0], anew[1], now,
                                              source="observer"))
    return out


def apply(conn: apsw.Connection, lease: Lease, proposal: Proposal, decision: Decision, now: int) -> Applied:
    """Write the decision, its curation event and the checkpoint's completion in one transaction."""
    checkpoints.hold(conn, lease.checkpoint_id, lease.owner)
    payload = json.loads(lease.payload_json)
    written: list[str] = []
    action, reason, targets = decision.action, decision.reason, list(decision.targets)
    if action == "create":
        # the world may have moved since planning: the rules are cheap, check them again
        again = rule_verdict(conn, lease, proposal)
        if again is not None:
            action, reason, targets = again.action, again.reason, list(again.targets)
        else:
            fix = renamed(proposal.content)
            renamed_ids = put_name_right(conn, lease, *fix, now) if fix else []
            written.append(store.insert_memory(conn, _draft(lease, proposal, payload), now))
            targets = written[:]
            written += renamed_ids
    elif action in ("update", "append", "consolidate"):
        rows = _check_unchanged(conn, decision)
        primary = rows[targets[0]]
        semantics = "append-document" if action == "append" else "merge-document"
        title = title_follows(primary["title"], primary["body"], decision.body)  # "…Lisbon." over "…Porto."
        store.revise_document(conn, primary, title, decision.body, now,
                              source=SOURCES_BY_TRIGGER.get(lease.trigger, "observer"),
                              reason=f"curation:{action}", semantics=semantics)
        # what it says now names whom or where it is about: "User now works at Northwind Labs." over
        # "…works at Acme…" is filed under Northwind Labs (it stayed under Acme)
        primary = follow_anchor(conn, {**primary, "id": primary["document_id"]}, primary["document_id"],
                                current_part(decision.body), now)
        _assert_relations(conn, proposal, primary, now)
        primary = _file_under_new_value(conn, proposal, primary, now)
        written.append(primary["document_id"])
        for other in targets[1:]:
            store.delete_memory(conn, rows[other], now, reason=f"consolidated into {primary['document_id']}",
                                source="observer", as_wrong=False)
            written.append(other)
    elif action == "skip" and reason in ("duplicate", "contained") and proposal.relations and targets:
        # Said again now: what it says of people and places holds now ("Anna moved to Porto." said
        # after a restated "…lives in Lisbon." must leave Porto current), though nothing new is kept.
        said = one(conn, "SELECT document_id, anchor_id, audience, boundary FROM memory_documents"
                         " WHERE document_id=? AND deleted_at IS NULL", (targets[0],))
        if said is not None:
            _assert_relations(conn, proposal, said, now)
    record_event(conn, checkpoint_id=lease.checkpoint_id, session_id=lease.session_id, action=action,
                 reason=reason, now=now, targets=targets, decided_by=decision.decided_by,
                 prompt_version=decision.prompt_version, response_sha256=decision.response_sha256,
                 detail={**decision.detail, "trigger": lease.trigger, "class": proposal.memory_class,
                         "attempt": lease.attempts})
    scrub = "secret" if action == "blocked" else None
    if action == "skip" and reason == "tombstone" and _erased_claim(conn, lease, proposal):
        scrub = "erased for good"
    with secure_delete(conn, scrub is not None):
        if scrub == "erased for good" and lease.session_id:
            texts = {proposal.title, proposal.content}
            erase_observer_runs(conn, lease.session_id, texts, hunted_in(texts))
        checkpoints.complete(conn, lease.checkpoint_id, lease.owner, now, scrub_reason=scrub)
    return Applied(lease.checkpoint_id, action, reason, tuple(written), scrubbed=scrub is not None)

