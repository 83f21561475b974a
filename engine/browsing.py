"""The Engine's verbs for what people see and correct (the browser UI, the tray, the CLI's
listings): API tokens, sessions and receipts, the knowledge graph, browsing and correcting
memories.

A mixin of `Engine` (engine.py keeps the memory verbs, sessions, recall and the lifecycle): each
method checks its input and the caller's permission, then calls the module that does the work.
`token` is the caller's (the person signed in to the page); None is the local, widest view.
"""

from __future__ import annotations

import logging

from . import browse as listing
from . import corrections, graph, graph_edit, history, overview, purge, search, tokens
from .errors import InvalidInput, NotFound, ScopeError
from .memory import MemoryItem, parse_id
from .operations import permission
from .policy import Scope
from .results import UpdateResult
from .tokens import CreatedToken, Token, require_permits

log = logging.getLogger("keepmind.engine")
TOUCH_EVERY_MS = 60_000  # a token's last use is recorded at most once a minute


class Browsing:
    """Mixed into Engine: see the module's docstring."""

    # -- API tokens --------------------------------------------------------------------------

    def verify_token(self, secret: object) -> Token | None:
        """The live token whose secret this is, or None."""
        return self._read(tokens.verify, secret)

    def touch_token(self, token: Token) -> None:
        """Record the token's last use, at most once a minute, without waiting for the write."""
        now = self.now()
        with self._touch_lock:
            if now - self._touched.get(token.id, -TOUCH_EVERY_MS) < TOUCH_EVERY_MS:
                return
            self._touched[token.id] = now
        try:
            self.db.submit(tokens.touch, token.id, now)
        except Exception:  # noqa: BLE001 - bookkeeping must never fail a request (e.g. engine closing)
            log.debug("token_touch_failed", exc_info=True)

    def create_token(self, name: str, audience_ceiling: str, boundaries=None, *,
                     by: Token | None = None) -> CreatedToken:
        """A new token (its secret is in the result and nowhere else); `by` may only create a
        token no wider than itself."""
        name, ceiling, bounds = tokens.check_spec(name, audience_ceiling, boundaries)
        if by is not None and not by.covers(Token("", name, ceiling, bounds, 0)):
            reach = "every boundary" if by.any_boundary else "only " + ", ".join(by.boundaries)
            raise ScopeError(f"a token can only create tokens no wider than itself: this one has ceiling "
                             f"{by.audience_ceiling} and may use {reach}")
        return self.write(tokens.create, name, ceiling, list(bounds), self.now())

    def list_tokens(self, *, include_revoked: bool = False, by: Token | None = None) -> list[Token]:
        """Tokens (never their secrets); with `by`, only those no wider than it."""
        found = self._read(tokens.list_tokens, include_revoked=include_revoked)
        return [t for t in found if by is None or by.covers(t)]

    def revoke_token(self, token_id_or_name: str, *, by: Token | None = None) -> Token:
        revoked = self.write(tokens.revoke, token_id_or_name, self.now(), by=by)
        self._wake_observer()  # its sessions ended: the observer distils them now
        return revoked

    def sessions_ended_with(self, token: Token) -> int:
        """How many open sessions a token's revocation ended."""
        return self._read(tokens.sessions_ended_with, token)

    def get_token(self, token_id_or_name: str) -> Token:
        return self._read(tokens.get, token_id_or_name)

    def ensure_token(self, secret: str | None, *, name: str = "local",
                     audience_ceiling: str = "personal") -> CreatedToken | None:
        """None when `secret` is a live token's; else a new token named `name` (or name-2, ...)
        with that ceiling and every boundary: how the local token is made on first start."""
        if secret and self.verify_token(secret) is not None:
            return None
        return self.write(tokens.create_unique, name, audience_ceiling, ["*"], self.now())

    # -- listings for people (the UI and the tray) -------------------------------------------

    def sessions(self, *, token: Token | None = None, limit: int = 50, before: int | None = None,
                 status: str | None = None) -> list[dict]:
        ceiling, bounds = permission(token)
        return self._read(overview.sessions, ceiling=ceiling, boundaries=bounds, limit=limit,
                          before=before, status=status)

    def turns(self, session_id: str, *, token: Token | None = None) -> list[dict]:
        """A session's turns (what the observer saw), for provenance."""
        self.session(session_id, token=token)
        return self._read(overview.turns, session_id)

    def receipts(self, *, token: Token | None = None, limit: int = 50, before: int | None = None,
                 session_id: str | None = None, injected: bool | None = None,
                 degraded: bool | None = None) -> list[dict]:
        ceiling, bounds = permission(token)
        found = self._read(overview.receipts, ceiling=ceiling, boundaries=bounds, limit=limit, before=before,
                           session_id=session_id, injected=injected, degraded=degraded)
        # A recall in a session whose policy also reads a boundary this token may not see: its
        # receipt is refused to the token (Engine.explain), so the list says so instead of linking
        # to a refusal, and does not count what it injected (it may be of that boundary).
        withheld: dict[str, str | None] = {}
        for row in found:
            sid = row["session_id"]
            if token is not None and sid not in withheld:
                held = self.scope(sid, token=token).withheld_boundaries
                withheld[sid] = held[0] if held else None
            row["withheld"] = withheld.get(sid)
            if row["withheld"]:
                row["injected_count"] = None
        return found

    def tombstones(self, *, token: Token | None = None, limit: int = 50,
                   before: int | None = None) -> list[dict]:
        ceiling, bounds = permission(token)
        return self._read(overview.tombstones, ceiling=ceiling, boundaries=bounds, limit=limit, before=before)

    def curation_events(self, *, token: Token | None = None, memory_id: str | None = None,
                        limit: int = 50, before: int | None = None) -> list[dict]:
        ceiling, bounds = permission(token)
        return self._read(overview.curation_events, ceiling=ceiling, boundaries=bounds,
                          memory_id=memory_id, limit=limit, before=before)

    # -- the knowledge graph -----------------------------------------------------------------

    def anchors(self, scope: Scope, *, query: str | None = None, anchor_type: str | None = None,
                limit: int = 50, after: str | None = None, in_use: bool | None = None) -> list[graph.Anchor]:
        """Anchors this scope may see, by name, with their memory and edge counts (`in_use`: only
        those with a memory or an edge it may see, or with False only those without)."""
        return self._read(graph.anchors, scope, self.now(), query=query, anchor_type=anchor_type,
                          limit=limit, after=after, in_use=in_use)

    def anchor_types(self, scope: Scope) -> list[str]:
        """The types of the anchors this scope may see (what the anchors page's filter offers)."""
        return self._read(graph.anchor_types, scope)

    def anchor(self, scope: Scope, anchor_id: str) -> graph.Anchor:
        return self._read(graph.anchor, scope, anchor_id, self.now())

    def edges(self, scope: Scope, anchor_id: str, *, as_of: int | None = None) -> list[graph.Edge]:
        """An anchor's edges with their validity intervals (current and retired); with `as_of`,
        the ones that held at that moment."""
        return self._read(graph.edges, scope, anchor_id, as_of=as_of)

    def neighbourhood(self, scope: Scope, anchor_id: str, *, depth: int = 1, limit: int = 40,
                      as_of: int | None = None) -> tuple[list[graph.Anchor], list[graph.Edge], bool]:
        """The anchors around one (depth 1-2, at most `limit`), the edges between them, and
        whether the cap cut anything off."""
        with self.db.snapshot() as conn:
            ids, found, truncated = graph.neighbourhood(conn, scope, anchor_id, depth=depth, limit=limit,
                                                        as_of=as_of)
            nodes = [graph.anchor(conn, scope, i, self.now()) for i in ids]
        return nodes, found, truncated

    # -- browsing and correcting, as a person does (the browser UI) -------------------------------

    def browse(self, scope: Scope, *, flt: listing.MemoryFilter | None = None, sort: str = "newest",
               cursor: str | None = None, limit: int = 50) -> listing.Page:
        """One page of the memories `scope` may see, filtered and sorted, keyset-paged by `cursor`."""
        return self._read(listing.list_page, scope, self.now(), flt=flt or listing.MemoryFilter(), sort=sort,
                          cursor=cursor, limit=limit)

    def search_memories(self, scope: Scope, query: str, *, flt: listing.MemoryFilter | None = None,
                        limit: int = listing.SEARCH_LIMIT) -> list[MemoryItem]:
        """Memories that match `query` in words or, with an embedder loaded, in meaning (best first)."""
        embedder = vectors = None
        if self.settings["memory.embeddings.enabled"]:
            embedder = self.models.embedder()
            vectors = self.models.vectors() if embedder is not None else None
        return self._read(listing.search, scope, self.now(), query, flt=flt or listing.MemoryFilter(),
                          embedder=embedder, vectors=vectors, limit=limit)

    def memory(self, scope: Scope, memory_id: str) -> MemoryItem:
        """One memory this scope may see (expired and trace ones too), with its anchor's name and
        recall count in `extra`; a record id resolves to the newest of its chain."""
        with self.db.snapshot() as conn:
            return listing.annotate(conn, [search.get_one(conn, scope, parse_id(memory_id), self.now())])[0]

    def author_scope(self, token: Token, audience: str, boundary: str) -> Scope:
        """The scope a person writes a memory by hand in: an audience and boundary `token` allows."""
        if not isinstance(boundary, str) or not boundary.strip():
            raise InvalidInput("choose a boundary (a workspace or channel name) for the memory")
        if audience not in ("personal", "team"):
            raise InvalidInput("choose the audience personal or team")
        require_permits(token, audience, boundary.strip())
        return Scope(audience, boundary.strip())

    def diff(self, scope: Scope, memory_id: str, old: int, new: int) -> list[history.DiffPart]:
        """Word by word, how revision `new` of a document differs from revision `old`."""
        by_number = {r["revision"]: r for r in self.revisions(scope, memory_id)}
        for n in (old, new):
            if n not in by_number:
                raise NotFound(f"{memory_id} has no revision {n}")
        a, b = by_number[old], by_number[new]
        return history.diff_words(f"{a['title']}\n\n{a['body']}", f"{b['title']}\n\n{b['body']}")

    def revert(self, scope: Scope, memory_id: str, revision: int, *, source: str = "ui") -> UpdateResult:
        """Make an earlier revision the newest one again (a new revision: history is kept)."""
        self._require_enabled()
        memory_id = parse_id(memory_id)
        number = self.write(corrections.revert, scope, memory_id, int(revision), self.now(), source=source)
        self.notify_written([memory_id])
        return UpdateResult(memory_id, "reverted", revision=number)

    def merge_duplicate(self, scope: Scope, memory_id: str, into_id: str, *, source: str = "ui") -> dict:
        """Fold a memory that repeats another into that living document (corrections.merge_duplicate):
        deleted without a tombstone, nothing it said lost."""
        self._require_enabled()
        result = self.write(corrections.merge_duplicate, scope, parse_id(memory_id), parse_id(into_id), self.now(),
                            source=source)
        self.notify_written([result["kept"], memory_id])
        return result

    def duplicate_merged_into(self, scope: Scope, memory_id: str) -> dict | None:
        """Where a memory merged as a duplicate went ({"into": MemoryItem, "title", "body": what it
        said}), when `scope` may see that memory; None otherwise (corrections.duplicate_merged_into)."""
        with self.db.snapshot() as conn:
            return corrections.duplicate_merged_into(conn, scope, parse_id(memory_id), self.now())

    def provenance(self, scope: Scope, memory_id: str, *, token: Token | None = None) -> dict:
        """Where a memory came from: its session's turns (the source turns marked), or its file and line."""
        ceiling, bounds = permission(token)
        with self.db.snapshot() as conn:
            item = search.get_one(conn, scope, parse_id(memory_id), self.now())
            return history.provenance(conn, item, ceiling=ceiling, boundaries=bounds)

    def recall_history(self, scope: Scope, memory_id: str, *, token: Token | None = None,
                       limit: int = 50) -> dict:
        """The recalls that injected a memory (with the message), newest first, and its totals."""
        ceiling, bounds = permission(token)
        with self.db.snapshot() as conn:
            item = search.get_one(conn, scope, parse_id(memory_id), self.now())
            return history.recall_history(conn, item, ceiling=ceiling, boundaries=bounds, limit=limit)

    def deleted(self, *, token: Token | None = None, cursor: str | None = None,
                limit: int = 50) -> tuple[list[dict], str | None]:
        """What was deleted as wrong and not restored (newest first), and the next page's cursor;
        `erased_at` says when one's text was erased for good (None while it can be restored)."""
        ceiling, bounds = permission(token)
        after = None
        if cursor:
            when, _, tomb = cursor.partition(".")
            if not when.isdigit() or not tomb.startswith("tomb-"):
                raise InvalidInput("that page link is broken: go back to the first page")
            after = (int(when), tomb)
        with self.db.snapshot() as conn:
            found = corrections.deleted_page(conn, ceiling=ceiling, boundaries=bounds, cursor=after, limit=limit + 1)
            more = len(found) > limit
            found = found[:limit]
            erased = purge.erased_at(conn, [t["tombstone_id"] for t in found])
        for t in found:
            t["erased_at"] = erased.get(t["tombstone_id"])
            if t["erased_at"] is not None:  # its blanked text is no title
                t.update(title=None, body=None)
        return found, (f"{found[-1]['created_at']}.{found[-1]['tombstone_id']}" if more else None)

    def restore(self, tombstone_id: str, *, token: Token | None = None) -> str:
        """Lift a tombstone: the memory is back, and the same fact may be learnt again (refused
        once its text was erased for good)."""
        self._require_enabled()
        ceiling, bounds = permission(token)
        restored = self.write(purge.restore_unless_erased, str(tombstone_id), self.now(), ceiling=ceiling,
                              boundaries=bounds)
        self.notify_written([restored])
        return restored

    def erase(self, tombstone_id: str, *, token: Token | None = None) -> dict:
        """Erase for good the text of a memory deleted as wrong (purge.erase): its revisions, its
        source turns, the proposals and receipts that copied it. The tombstone stays, so the same
        claim is still not learnt again; it can no longer be restored. Returns what was erased."""
        self._require_enabled()
        ceiling, bounds = permission(token)
        erased = self.write(purge.erase, str(tombstone_id), self.now(), ceiling=ceiling, boundaries=bounds)
        recaller = getattr(self, "recaller", None)
        if recaller is not None:  # its word counts in memory held the erased stems
            recaller.recount_terms()
        self.notify_written(erased["ids"])
        # the rows hold it no more; the file's freed pages and the WAL's old page copies still did.
        # The erase is committed already: a scrub that fails (a full disk: VACUUM needs a copy's
        # room) is said in the result and the log, and the next erase scrubs again.
        try:
            erased["scrubbed"] = self.db.scrub()
        except Exception:  # noqa: BLE001 - the erase stands; only the files' free space is left
            log.warning("memory_erase_scrub_failed", exc_info=True)
            erased["scrubbed"] = False
        return erased

    def narrow_audience(self, scope: Scope, memory_ids: list[str], audience: str, *,
                        token: Token | None = None) -> list[str]:
        """Move memories to a more private audience (the anchor and edges they asserted follow)."""
        self._require_enabled()
        ids = [parse_id(i) for i in memory_ids]
        for item in self.get(scope, ids).items if ids else []:
            if token is not None:
                require_permits(token, audience, item.boundary)
        now = self.now()
        moved = self.write(lambda conn: [corrections.narrow_audience(conn, scope, i, audience, now) for i in ids])
        self.notify_written(moved)
        return moved

    def rename_anchor(self, scope: Scope, anchor_id: str, name: str) -> str:
        """Rename an anchor; its old name stays as an alias (later mentions of it land here)."""
        return self.write(graph_edit.rename, scope, anchor_id, name, self.now())

    def merge_anchors(self, scope: Scope, from_id: str, into_id: str) -> dict:
        """Fold one anchor into another (memories, edges and aliases move; the merge is recorded)."""
        merged = self.write(graph_edit.merge, scope, from_id, into_id, self.now())
        self.notify_written([])
        return merged

    def edges_between(self, scope: Scope, a_id: str, b_id: str) -> list[graph.Edge]:
        """The edges holding now between two anchors: merging one into the other drops them."""
        return self._read(graph_edit.edges_between, scope, a_id, b_id)

    def undo_merge(self, scope: Scope, merge_id: str) -> dict:
        """Undo the last merge into an anchor (graph_edit.unmerge): the merged-away anchor stands again."""
        undone = self.write(graph_edit.unmerge, scope, merge_id, self.now())
        self.notify_written([])
        return undone

    def anchor_history(self, scope: Scope, anchor_id: str) -> dict:
        """An anchor's former names (aliases) and the merges that folded others into it, each with
        why it cannot be undone now (`undo_blocked`, None when it can)."""
        with self.db.snapshot() as conn:
            graph.anchor(conn, scope, anchor_id, self.now())
            merges = [{**m, "undo_blocked": graph_edit.undoable(conn, m)} for m in graph_edit.merges(conn, anchor_id)]
            return {"aliases": graph_edit.aliases(conn, anchor_id), "merges": merges}

    def merged_into(self, scope: Scope, anchor_id: str) -> str | None:
        """The anchor a merged-away anchor became, if this scope may see it."""
        with self.db.snapshot() as conn:
            found = graph_edit.merged_into(conn, anchor_id)
            if found is None:
                return None
            try:
                return graph.anchor(conn, scope, found["into_anchor_id"], self.now()).id
            except NotFound:
                return None

    def counts(self, scope: Scope, *, since: int) -> dict:
        """What `scope` may see, counted, and what was formed and recalled since `since`."""
        return self._read(overview.visible_counts, scope, self.now(), since)

