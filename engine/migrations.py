"""Schema migrations: an append-only list of small named functions.

Each migration runs in one transaction together with the `_migrations` row that records it, so
a crash leaves either both or neither. Never edit or reorder an applied migration; append a new one.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Callable

import apsw

from .memory import claim_fingerprints

Migration = tuple[str, Callable[[apsw.Connection], None]]


def _m001_initial(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            audience TEXT NOT NULL CHECK (audience IN ('personal', 'team', 'public')),
            boundary TEXT NOT NULL,
            channel TEXT,
            title TEXT,
            token_id TEXT,
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'ended', 'passivated')),
            compaction_epoch INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            ended_at INTEGER
        );

        CREATE TABLE session_turns (
            session_id TEXT NOT NULL REFERENCES sessions(session_id),
            turn_index INTEGER NOT NULL,
            user_text TEXT NOT NULL DEFAULT '',
            assistant_text TEXT NOT NULL DEFAULT '',
            tools_json TEXT NOT NULL DEFAULT '[]',
            recalled_ids_json TEXT NOT NULL DEFAULT '[]',
            skills_json TEXT NOT NULL DEFAULT '[]',
            created_at INTEGER NOT NULL,
            PRIMARY KEY (session_id, turn_index)
        );

        CREATE TABLE memory_anchors (
            anchor_id TEXT PRIMARY KEY,
            anchor_type TEXT NOT NULL DEFAULT 'concept',
            canonical_name TEXT NOT NULL,
            normalized_name TEXT NOT NULL,
            audience TEXT NOT NULL,
            boundary TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'tombstoned')),
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            UNIQUE (audience, boundary, normalized_name)
        );

        CREATE TABLE memory_documents (
            document_id TEXT PRIMARY KEY,
            anchor_id TEXT REFERENCES memory_anchors(anchor_id),
            memory_class TEXT NOT NULL CHECK (memory_class IN ('durable_fact', 'evidence', 'trace')),
            title TEXT NOT NULL,
            body TEXT NOT NULL,
            aliases TEXT NOT NULL DEFAULT '',
            facets TEXT NOT NULL DEFAULT '',
            update_semantics TEXT NOT NULL DEFAULT 'merge-document',
            audience TEXT NOT NULL CHECK (audience IN ('personal', 'team', 'public')),
            boundary TEXT NOT NULL,
            author_audience TEXT NOT NULL,
            sensitivity TEXT NOT NULL DEFAULT 'normal',
            recall_mode TEXT NOT NULL DEFAULT 'auto',
            confidence REAL NOT NULL DEFAULT 0.8,
            source TEXT NOT NULL,
            session_id TEXT,
            provenance_json TEXT NOT NULL DEFAULT '{}',
            authored_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            freshness_at INTEGER NOT NULL,
            expires_at INTEGER,
            revision INTEGER NOT NULL DEFAULT 1,
            content_hash TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            deleted_at INTEGER,
            deactivated_reason TEXT
        );
        CREATE INDEX memory_documents_scope ON memory_documents (boundary, audience, updated_at DESC);
        CREATE INDEX memory_documents_anchor ON memory_documents (anchor_id, updated_at DESC);
        CREATE INDEX memory_documents_fingerprint ON memory_documents (fingerprint);

        CREATE TABLE memory_revisions (
            document_id TEXT NOT NULL REFERENCES memory_documents(document_id),
            revision INTEGER NOT NULL,
            title TEXT NOT NULL,
            body TEXT NOT NULL,
            source TEXT NOT NULL,
            reason TEXT,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (document_id, revision)
        );

        CREATE TABLE memory_records (
            record_id TEXT PRIMARY KEY,
            anchor_id TEXT REFERENCES memory_anchors(anchor_id),
            memory_class TEXT NOT NULL CHECK (memory_class IN ('durable_fact', 'evidence', 'trace')),
            title TEXT NOT NULL,
            body TEXT NOT NULL,
            aliases TEXT NOT NULL DEFAULT '',
            facets TEXT NOT NULL DEFAULT '',
            update_semantics TEXT NOT NULL DEFAULT 'immutable-record',
            supersedes_record_id TEXT UNIQUE REFERENCES memory_records(record_id),
            is_tombstone INTEGER NOT NULL DEFAULT 0,
            audience TEXT NOT NULL CHECK (audience IN ('personal', 'team', 'public')),
            boundary TEXT NOT NULL,
            author_audience TEXT NOT NULL,
            sensitivity TEXT NOT NULL DEFAULT 'normal',
            recall_mode TEXT NOT NULL DEFAULT 'searchable',
            confidence REAL NOT NULL DEFAULT 0.8,
            source TEXT NOT NULL,
            session_id TEXT,
            provenance_json TEXT NOT NULL DEFAULT '{}',
            authored_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            freshness_at INTEGER NOT NULL,
            expires_at INTEGER,
            content_hash TEXT NOT NULL,
            fingerprint TEXT NOT NULL
        );
        CREATE INDEX memory_records_scope ON memory_records (boundary, audience, created_at DESC);
        CREATE INDEX memory_records_fingerprint ON memory_records (fingerprint);

        CREATE TABLE memory_edges (
            edge_id TEXT PRIMARY KEY,
            from_anchor_id TEXT NOT NULL REFERENCES memory_anchors(anchor_id),
            relation TEXT NOT NULL,
            to_anchor_id TEXT NOT NULL REFERENCES memory_anchors(anchor_id),
            audience TEXT NOT NULL,
            boundary TEXT NOT NULL,
            confidence REAL NOT NULL DEFAULT 0.8,
            asserted_by TEXT,
            valid_from INTEGER NOT NULL,
            valid_to INTEGER,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX memory_edges_from ON memory_edges (from_anchor_id, relation, valid_to);
        CREATE INDEX memory_edges_to ON memory_edges (to_anchor_id, relation);

        CREATE TABLE memory_embeddings (
            item_id TEXT NOT NULL,
            model_id TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            dims INTEGER NOT NULL,
            vector BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (item_id, model_id)
        );
        CREATE INDEX memory_embeddings_model ON memory_embeddings (model_id);

        CREATE TABLE tombstones (
            tombstone_id TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            audience TEXT NOT NULL,
            boundary TEXT NOT NULL,
            memory_id TEXT,
            model_id TEXT,
            vector BLOB,
            reason TEXT,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX tombstones_fingerprint ON tombstones (fingerprint);

        CREATE TABLE memory_checkpoints (
            checkpoint_id TEXT PRIMARY KEY,
            session_id TEXT,
            trigger_type TEXT NOT NULL,
            priority INTEGER NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'leased', 'completed', 'dead')),
            payload_json TEXT NOT NULL,
            audience TEXT NOT NULL,
            boundary TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            lease_owner TEXT,
            lease_expires_at INTEGER,
            available_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            completed_at INTEGER
        );
        CREATE INDEX memory_checkpoints_queue
            ON memory_checkpoints (status, priority DESC, created_at ASC);

        CREATE TABLE curation_events (
            event_id INTEGER PRIMARY KEY,
            checkpoint_id TEXT,
            session_id TEXT,
            action TEXT NOT NULL,
            targets_json TEXT NOT NULL DEFAULT '[]',
            decided_by TEXT NOT NULL,
            prompt_version TEXT,
            response_sha256 TEXT,
            reason TEXT NOT NULL,
            detail_json TEXT NOT NULL DEFAULT '{}',
            created_at INTEGER NOT NULL
        );
        CREATE INDEX curation_events_checkpoint ON curation_events (checkpoint_id);

        CREATE TABLE recall_events (
            receipt_id TEXT PRIMARY KEY,
            session_id TEXT,
            query TEXT NOT NULL,
            receipt_json TEXT NOT NULL,
            injected_count INTEGER NOT NULL DEFAULT 0,
            degraded INTEGER NOT NULL DEFAULT 0,
            total_ms REAL,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX recall_events_created ON recall_events (created_at);
        CREATE INDEX recall_events_session ON recall_events (session_id, created_at);

        CREATE TABLE api_tokens (
            token_id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            token_hash TEXT NOT NULL UNIQUE,
            audience_ceiling TEXT NOT NULL CHECK (audience_ceiling IN ('personal', 'team', 'public')),
            boundaries_json TEXT NOT NULL DEFAULT '["*"]',
            created_at INTEGER NOT NULL,
            last_used_at INTEGER,
            revoked_at INTEGER
        );
        """
    )
    # FTS5 external-content indexes over title, body, aliases and facets, kept in sync by
    # triggers. Only live rows are indexed: a deleted document, or a record that was superseded,
    # leaves its index; the read predicate checks the same conditions again.
    for table, _key in (("memory_documents", "document_id"), ("memory_records", "record_id")):
        fts = f"{table}_fts"
        conn.execute(
            f"""
            CREATE VIRTUAL TABLE {fts} USING fts5(
                title, body, aliases, facets,
                content='{table}', content_rowid='rowid',
                tokenize='porter unicode61 remove_diacritics 2'
            );
            """
        )
    conn.execute(
        """
        CREATE TRIGGER memory_documents_ai AFTER INSERT ON memory_documents
        WHEN new.deleted_at IS NULL BEGIN
            INSERT INTO memory_documents_fts(rowid, title, body, aliases, facets)
            VALUES (new.rowid, new.title, new.body, new.aliases, new.facets);
        END;
        CREATE TRIGGER memory_documents_ad AFTER DELETE ON memory_documents
        WHEN old.deleted_at IS NULL BEGIN
            INSERT INTO memory_documents_fts(memory_documents_fts, rowid, title, body, aliases, facets)
            VALUES ('delete', old.rowid, old.title, old.body, old.aliases, old.facets);
        END;
        CREATE TRIGGER memory_documents_au_old AFTER UPDATE ON memory_documents
        WHEN old.deleted_at IS NULL BEGIN
            INSERT INTO memory_documents_fts(memory_documents_fts, rowid, title, body, aliases, facets)
            VALUES ('delete', old.rowid, old.title, old.body, old.aliases, old.facets);
        END;
        CREATE TRIGGER memory_documents_au_new AFTER UPDATE ON memory_documents
        WHEN new.deleted_at IS NULL BEGIN
            INSERT INTO memory_documents_fts(rowid, title, body, aliases, facets)
            VALUES (new.rowid, new.title, new.body, new.aliases, new.facets);
        END;

        CREATE TRIGGER memory_records_ai AFTER INSERT ON memory_records BEGIN
            INSERT INTO memory_records_fts(memory_records_fts, rowid, title, body, aliases, facets)
            SELECT 'delete', r.rowid, r.title, r.body, r.aliases, r.facets
            FROM memory_records r WHERE r.record_id = new.supersedes_record_id AND r.is_tombstone = 0;
            INSERT INTO memory_records_fts(rowid, title, body, aliases, facets)
            SELECT new.rowid, new.title, new.body, new.aliases, new.facets WHERE new.is_tombstone = 0;
        END;
        CREATE TRIGGER memory_records_no_update BEFORE UPDATE ON memory_records BEGIN
            SELECT RAISE(ABORT, 'memory_records is append-only: supersede instead');
        END;
        """
    )


def _m002_observer_runs(conn: apsw.Connection) -> None:
    """One row per finished observer run: what it covered, what it proposed, why it failed."""
    conn.execute(
        """
        CREATE TABLE observer_runs (
            run_id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            trigger TEXT NOT NULL,
            from_turn INTEGER NOT NULL,
            through_turn INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('completed', 'stale', 'failed')),
            decided_by TEXT NOT NULL,
            prompt_version TEXT,
            response_sha256 TEXT,
            accepted_json TEXT NOT NULL DEFAULT '[]',
            rejections_json TEXT NOT NULL DEFAULT '{}',
            error TEXT,
            started_at INTEGER NOT NULL,
            finished_at INTEGER NOT NULL
        );
        CREATE INDEX observer_runs_session ON observer_runs (session_id, finished_at);
        """
    )


def _m003_documents_fts_single_update_trigger(conn: apsw.Connection) -> None:
    """Fix: two AFTER UPDATE triggers fired insert-new before delete-old (SQLite runs the newest
    trigger first), so a revised document vanished from the FTS index. One trigger, in order,
    and the index rebuilt from the live rows."""
    conn.execute(
        """
        DROP TRIGGER IF EXISTS memory_documents_au_old;
        DROP TRIGGER IF EXISTS memory_documents_au_new;
        CREATE TRIGGER memory_documents_au AFTER UPDATE ON memory_documents BEGIN
            INSERT INTO memory_documents_fts(memory_documents_fts, rowid, title, body, aliases, facets)
            SELECT 'delete', old.rowid, old.title, old.body, old.aliases, old.facets
            WHERE old.deleted_at IS NULL;
            INSERT INTO memory_documents_fts(rowid, title, body, aliases, facets)
            SELECT new.rowid, new.title, new.body, new.aliases, new.facets WHERE new.deleted_at IS NULL;
        END;
        INSERT INTO memory_documents_fts(memory_documents_fts) VALUES ('delete-all');
        INSERT INTO memory_documents_fts(rowid, title, body, aliases, facets)
            SELECT rowid, title, body, aliases, facets FROM memory_documents WHERE deleted_at IS NULL;
        """
    )


def _m004_browser_ui(conn: apsw.Connection) -> None:
    """What the browser UI reads and changes, kept fast at 100,000 memories.

    - Keyset paging: each table ordered by its own time with its id as the tiebreak; records by
      anchor (the anchor page and its counts).
    - Recall history: one row per memory a recall injected (pruned with its receipt), and per
      memory the all-time count and the last time (for "last recalled" and "most recalled").
    - Deleted as wrong: who deleted (the source) and when a person restored it (the tombstone is
      lifted, never erased, so a restore is never silent either).
    - The graph: anchor aliases (an old name after a rename or a merge resolves to the anchor it
      became) and one row per merge.
    - Records stay append-only in their content; their anchor (a merge moves it) and audience (a
      person narrows it) may change, as those say where a record is shown, not what it says.
    """
    conn.execute(
        """
        CREATE INDEX memory_documents_updated ON memory_documents (updated_at, document_id);
        CREATE INDEX memory_documents_created ON memory_documents (created_at);
        CREATE INDEX memory_records_created ON memory_records (created_at, record_id);
        CREATE INDEX memory_records_anchor ON memory_records (anchor_id, created_at);

        CREATE TABLE recall_injections (
            receipt_id TEXT NOT NULL,
            item_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (item_id, created_at, receipt_id)
        );
        CREATE INDEX recall_injections_receipt ON recall_injections (receipt_id);
        CREATE INDEX recall_injections_created ON recall_injections (created_at);

        CREATE TABLE memory_recall_stats (
            item_id TEXT PRIMARY KEY,
            recalled_count INTEGER NOT NULL,
            last_recalled_at INTEGER NOT NULL
        );
        CREATE INDEX memory_recall_stats_last ON memory_recall_stats (last_recalled_at, item_id);
        CREATE INDEX memory_recall_stats_count ON memory_recall_stats (recalled_count, item_id);

        ALTER TABLE tombstones ADD COLUMN source TEXT;
        ALTER TABLE tombstones ADD COLUMN lifted_at INTEGER;
        CREATE INDEX tombstones_created ON tombstones (created_at, tombstone_id);

        CREATE TABLE anchor_aliases (
            alias TEXT NOT NULL,
            normalized_name TEXT NOT NULL,
            anchor_id TEXT NOT NULL REFERENCES memory_anchors(anchor_id),
            audience TEXT NOT NULL,
            boundary TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (audience, boundary, normalized_name)
        );
        CREATE INDEX anchor_aliases_anchor ON anchor_aliases (anchor_id);

        CREATE TABLE anchor_merges (
            merge_id TEXT PRIMARY KEY,
            from_anchor_id TEXT NOT NULL,
            from_name TEXT NOT NULL,
            into_anchor_id TEXT NOT NULL,
            into_name TEXT NOT NULL,
            memories_moved INTEGER NOT NULL,
            edges_moved INTEGER NOT NULL,
            source TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX anchor_merges_into ON anchor_merges (into_anchor_id, created_at);

        DROP TRIGGER IF EXISTS memory_records_no_update;
        CREATE TRIGGER memory_records_no_update BEFORE UPDATE OF
            record_id, memory_class, title, body, aliases, facets, update_semantics, supersedes_record_id,
            is_tombstone, boundary, author_audience, sensitivity, recall_mode, confidence, source,
            session_id, provenance_json, authored_at, created_at, freshness_at, expires_at, content_hash,
            fingerprint
        ON memory_records BEGIN
            SELECT RAISE(ABORT, 'memory_records is append-only: supersede instead');
        END;
        """
    )
    # Recall history of the receipts already kept.
    conn.execute(
        """
        INSERT OR IGNORE INTO recall_injections(receipt_id, item_id, created_at)
            SELECT e.receipt_id, json_extract(j.value, '$.id'), e.created_at
            FROM recall_events e, json_each(e.receipt_json, '$.injected') j
            WHERE e.injected_count > 0 AND json_extract(j.value, '$.id') IS NOT NULL;
        INSERT INTO memory_recall_stats(item_id, recalled_count, last_recalled_at)
            SELECT item_id, COUNT(*), MAX(created_at) FROM recall_injections GROUP BY item_id;
        """
    )


def _m005_app_state(conn: apsw.Connection) -> None:
    """Small durable switches the person sets (memory paused), kept across restarts."""
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS app_state (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at INTEGER NOT NULL
        );
        """
    )


def _m006_review_and_feedback(conn: apsw.Connection) -> None:
    """Review before keeping, discarding, and people's feedback on recalls.

    - Checkpoints gain two states: `review` (an observed proposal waiting for a person; the
      curation worker never leases it) and `discarded` (a person dropped it, or rejected it in
      review). SQLite cannot change a CHECK constraint, so the table is rebuilt with its rows.
    - `recall_feedback`: a person's labels on recalls ("don't inject this here", "this should
      have been recalled"), with a copy of the message so a label outlives its pruned receipt.
    - The sessions page lists sessions newest first with the memories each formed: indexes on the
      session of a memory and on when a session began keep it fast at 100,000 memories.
    """
    conn.execute(
        """
        CREATE TABLE memory_checkpoints_new (
            checkpoint_id TEXT PRIMARY KEY,
            session_id TEXT,
            trigger_type TEXT NOT NULL,
            priority INTEGER NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'leased', 'completed', 'dead', 'review', 'discarded')),
            payload_json TEXT NOT NULL,
            audience TEXT NOT NULL,
            boundary TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            lease_owner TEXT,
            lease_expires_at INTEGER,
            available_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            completed_at INTEGER
        );
        INSERT INTO memory_checkpoints_new SELECT checkpoint_id, session_id, trigger_type, priority, status,
            payload_json, audience, boundary, attempts, last_error, lease_owner, lease_expires_at, available_at,
            created_at, updated_at, completed_at FROM memory_checkpoints ORDER BY rowid;
        DROP TABLE memory_checkpoints;
        ALTER TABLE memory_checkpoints_new RENAME TO memory_checkpoints;
        CREATE INDEX memory_checkpoints_queue ON memory_checkpoints (status, priority DESC, created_at ASC);
        CREATE INDEX memory_checkpoints_updated ON memory_checkpoints (status, updated_at);

        CREATE TABLE recall_feedback (
            feedback_id TEXT PRIMARY KEY,
            receipt_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            audience TEXT NOT NULL,
            boundary TEXT NOT NULL,
            item_id TEXT NOT NULL,
            label TEXT NOT NULL CHECK (label IN ('not_here', 'should_recall')),
            query TEXT NOT NULL,
            source TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE (receipt_id, item_id, label)
        );
        CREATE INDEX recall_feedback_receipt ON recall_feedback (receipt_id);
        CREATE INDEX recall_feedback_created ON recall_feedback (created_at);

        CREATE INDEX IF NOT EXISTS memory_documents_session ON memory_documents (session_id);
        CREATE INDEX IF NOT EXISTS memory_records_session ON memory_records (session_id);
        CREATE INDEX IF NOT EXISTS sessions_created ON sessions (created_at);
        """
    )


def _m007_recall_term_stats(conn: apsw.Connection) -> None:
    """Recall's term statistics as last counted, so a start counts only what was written since."""
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS recall_term_stats (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            body BLOB NOT NULL,
            saved_at INTEGER NOT NULL
        );
        """
    )


def _m008_recall_events_epoch(conn: apsw.Connection) -> None:
    """The compaction epoch of each receipt as a column: progressive exclusion reads what a session
    was given since its last compaction from the injection rows, not by parsing every receipt."""
    conn.execute(
        """
        ALTER TABLE recall_events ADD COLUMN compaction_epoch INTEGER;
        UPDATE recall_events SET compaction_epoch = json_extract(receipt_json, '$.compaction_epoch');
        CREATE INDEX recall_events_session_epoch ON recall_events (session_id, compaction_epoch);
        """
    )


# Every table with a boundary column; memory_anchors and anchor_aliases are merged, not just renamed.
_BOUNDARY_TABLES = ("sessions", "memory_documents", "memory_records", "memory_edges", "tombstones",
                    "memory_checkpoints", "recall_feedback")


def _nfc(text):
    return unicodedata.normalize("NFC", text) if isinstance(text, str) else text


def _m009_boundaries_in_nfc(conn: apsw.Connection) -> None:
    """Boundary names in Unicode NFC. Before, "Café" typed (one code point for é) and "Café" from a
    macOS folder name (e and a combining accent) were two boundaries: the same project's memories
    split in two, and a token limited to one refused the other. An anchor that now meets its twin
    in the other spelling is merged into it (its memories, edges and aliases move over)."""
    conn.create_scalar_function("km_nfc", _nfc, 1, deterministic=True)
    twins = []
    for table, key, first in (("memory_anchors", "anchor_id", "status != 'active', "), ("anchor_aliases", "alias", "")):
        groups: dict[tuple, list] = {}
        # an active anchor is kept, then one already in NFC, then the oldest: the others fold into it
        for row in conn.execute(f"SELECT {key}, audience, boundary, normalized_name FROM {table}"
                                f" ORDER BY {first}boundary != km_nfc(boundary), created_at, rowid"):
            groups.setdefault((row[1], _nfc(row[2]), row[3]), []).append(row)
        for kept, *gone in (g for g in groups.values() if len(g) > 1):
            if table == "memory_anchors":
                twins += [(g[0], kept[0]) for g in gone]
            else:
                conn.executemany("DELETE FROM anchor_aliases WHERE audience=? AND boundary=? AND normalized_name=?",
                                 [g[1:] for g in gone])
    for gone, kept in twins:
        conn.execute("UPDATE memory_documents SET anchor_id=? WHERE anchor_id=?", (kept, gone))
        conn.execute("UPDATE memory_records SET anchor_id=? WHERE anchor_id=?", (kept, gone))
        conn.execute("UPDATE memory_edges SET from_anchor_id=? WHERE from_anchor_id=?", (kept, gone))
        conn.execute("UPDATE memory_edges SET to_anchor_id=? WHERE to_anchor_id=?", (kept, gone))
        conn.execute("UPDATE memory_edges SET valid_to=created_at WHERE from_anchor_id=? AND to_anchor_id=?"
                     " AND valid_to IS NULL", (kept, kept))  # an edge between the twins holds no longer
        conn.execute("UPDATE anchor_aliases SET anchor_id=? WHERE anchor_id=?", (kept, gone))
        conn.execute("UPDATE anchor_merges SET into_anchor_id=? WHERE into_anchor_id=?", (kept, gone))
        conn.execute("DELETE FROM memory_anchors WHERE anchor_id=?", (gone,))
    # memory_records is append-only by trigger (004); the rename is not a new claim, so the trigger
    # steps aside for it and comes back as it was.
    guard = next(conn.execute("SELECT sql FROM sqlite_master WHERE name='memory_records_no_update'"))[0]
    conn.execute("DROP TRIGGER memory_records_no_update")
    for table in ("memory_anchors", "anchor_aliases", *_BOUNDARY_TABLES):
        conn.execute(f"UPDATE {table} SET boundary = km_nfc(boundary) WHERE boundary != km_nfc(boundary)")
    conn.execute(guard)
    for token_id, listed in list(conn.execute("SELECT token_id, boundaries_json FROM api_tokens")):
        names = json.loads(listed)
        spelled = list(dict.fromkeys(_nfc(n) for n in names))
        if spelled != names:
            conn.execute("UPDATE api_tokens SET boundaries_json=? WHERE token_id=?", (json.dumps(spelled), token_id))


def _m010_token_names_of_live_tokens(conn: apsw.Connection) -> None:
    """A token's name is unique among live tokens only: a revoked token keeps its name (its sessions
    stay attributable) and no longer holds it, so `local` is `local` again after a rotation and
    `revoke local` means the live one. SQLite cannot drop a column's UNIQUE: the table is rebuilt."""
    conn.execute(
        """
        CREATE TABLE api_tokens_010 (
            token_id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            token_hash TEXT NOT NULL UNIQUE,
            audience_ceiling TEXT NOT NULL CHECK (audience_ceiling IN ('personal', 'team', 'public')),
            boundaries_json TEXT NOT NULL DEFAULT '["*"]',
            created_at INTEGER NOT NULL,
            last_used_at INTEGER,
            revoked_at INTEGER
        );
        INSERT INTO api_tokens_010 SELECT token_id, name, token_hash, audience_ceiling, boundaries_json, created_at,
            last_used_at, revoked_at FROM api_tokens;
        DROP TABLE api_tokens;
        ALTER TABLE api_tokens_010 RENAME TO api_tokens;
        CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
        CREATE INDEX api_tokens_name ON api_tokens (name, created_at);
        """
    )


def _m011_curation_events_session(conn: apsw.Connection) -> None:
    # A session's memories include those its turns were added to (curation's appends and merges),
    # which the sessions table counts from the curation events of the session.
    conn.execute("CREATE INDEX IF NOT EXISTS curation_events_session ON curation_events (session_id, action)")


def _m012_anchor_merge_moves(conn: apsw.Connection) -> None:
    # What each merge moved, item by item, so that the last merge into an anchor can be undone
    # (graph_edit.unmerge). Not exported: a merge carried by an import cannot be undone.
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS anchor_merge_moves (
            merge_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('document', 'record', 'edge_from', 'edge_to', 'edge_closed',
                                               'alias', 'alias_added', 'alias_replaced')),
            item_id TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX IF NOT EXISTS anchor_merge_moves_merge ON anchor_merge_moves (merge_id)")


# The columns memory_records' append-only guard (004) protects; an erase may blank the text ones.
_RECORD_GUARDED = ("record_id", "memory_class", "title", "body", "aliases", "facets", "update_semantics",
                   "supersedes_record_id", "is_tombstone", "boundary", "author_audience", "sensitivity",
                   "recall_mode", "confidence", "source", "session_id", "provenance_json", "authored_at",
                   "created_at", "freshness_at", "expires_at", "content_hash", "fingerprint")


def _m013_erase_for_good(conn: apsw.Connection) -> None:
    """A memory deleted as wrong can be erased for good (engine/purge.py): its text leaves every
    table, its tombstone stays (fingerprint only) so the claim is still not learnt again.

    - `tombstones.erased_at`: when its memory's text was erased; such a tombstone cannot be lifted.
    - `memory_records.erased_at`, and the append-only guard narrowed to let exactly one change
      through: an erase, which sets erased_at, blanks title and body to the marker and aliases and
      facets to nothing, and leaves every other guarded column as it was. Anything else still aborts.
    """
    same = " AND ".join(f"new.{c} IS old.{c}" for c in _RECORD_GUARDED
                        if c not in ("title", "body", "aliases", "facets"))
    marker = "(erased)"  # purge.ERASED_TEXT, written out: a migration never changes once applied
    conn.execute(
        f"""
        ALTER TABLE tombstones ADD COLUMN erased_at INTEGER;
        ALTER TABLE memory_records ADD COLUMN erased_at INTEGER;
        DROP TRIGGER IF EXISTS memory_records_no_update;
        CREATE TRIGGER memory_records_no_update BEFORE UPDATE OF {", ".join(_RECORD_GUARDED)}
        ON memory_records WHEN NOT (new.erased_at IS NOT NULL AND new.title = '{marker}'
            AND new.body = '{marker}' AND new.aliases = '' AND new.facets = '' AND {same})
        BEGIN
            SELECT RAISE(ABORT, 'memory_records is append-only: supersede instead');
        END;
        """
    )


def _m014_tombstone_fingerprints(conn: apsw.Connection) -> None:
    """A memory deleted as wrong is refused in every wording it had, not only its last: a claim
    corrected ("quokka" to "wombat") and then deleted must not come back as it was first said.

    `tombstone_fingerprints` holds the fingerprints (hashes only, never text: an erase keeps them)
    of a tombstone's earlier wordings, and of each wording as the user would say it ("My cat…" for
    the observer's "User's cat…"), the ones that differ from `tombstones.fingerprint`. Each
    curated proposal looks its fingerprint up here, hence the index on it. Standing tombstones of
    memories not erased get theirs now; an erased one has no words left to hash.
    """
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS tombstone_fingerprints (
            tombstone_id TEXT NOT NULL REFERENCES tombstones(tombstone_id),
            fingerprint TEXT NOT NULL,
            PRIMARY KEY (tombstone_id, fingerprint)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS tombstone_fingerprints_fingerprint ON tombstone_fingerprints (fingerprint);
        """
    )
    _fingerprint_standing_wordings(conn)


def _fingerprint_standing_wordings(conn: apsw.Connection) -> None:
    """Every fingerprint memory.claim_fingerprints gives each wording of a memory deleted as wrong
    whose text is kept (an erased one has none left: what it had stays)."""
    # The wordings as store.wordings reads them, written out here: a migration never changes.
    # The hashes are memory.claim_fingerprints' own, so what is stored is what a lookup computes.
    standing = list(conn.execute(
        "SELECT tombstone_id, memory_id, fingerprint FROM tombstones WHERE lifted_at IS NULL"
        " AND erased_at IS NULL AND memory_id IS NOT NULL"))
    for tombstone_id, memory_id, own in standing:
        bodies = conn.execute("SELECT body FROM memory_documents WHERE document_id = ?1 UNION ALL"
                              " SELECT body FROM memory_revisions WHERE document_id = ?1", (memory_id,)).fetchall()
        bodies += conn.execute(
            "WITH RECURSIVE chain(id, older) AS (SELECT record_id, supersedes_record_id FROM memory_records"
            " WHERE record_id = ? UNION ALL SELECT r.record_id, r.supersedes_record_id FROM memory_records r"
            " JOIN chain ON r.record_id = chain.older)"
            " SELECT r.body FROM chain JOIN memory_records r ON r.record_id = chain.id WHERE r.is_tombstone = 0",
            (memory_id,)).fetchall()
        for found in sorted({fp for (b,) in bodies if b for fp in claim_fingerprints(b)} - {own}):
            conn.execute("INSERT OR IGNORE INTO tombstone_fingerprints(tombstone_id, fingerprint) VALUES (?, ?)",
                         (tombstone_id, found))


def _m015_tombstone_fingerprints_third_person(conn: apsw.Connection) -> None:
    """A claim the user said of themselves ("I am a plumber.") is refused, once deleted, as the
    observer writes it too ("User is a plumber."): claim_fingerprints gives that wording now, and
    the tombstones already standing get it."""
    _fingerprint_standing_wordings(conn)


def _m016_tombstones_memory(conn: apsw.Connection) -> None:
    """The graph asks, of each retired edge, whether the memory that said it was deleted as wrong
    (graph.WRONG_SQL): by the memory's id."""
    conn.execute("CREATE INDEX IF NOT EXISTS tombstones_memory ON tombstones (memory_id)")


def _m017_documents_bears_on(conn: apsw.Connection) -> None:
    """What a document bears on whatever a task's words (bearing.py: a diet bears on every food
    task), worked out from its text when the text is written and read by a partial index. The
    documents stored before get theirs here: only those FTS5 finds by bearing.WORDS can have one."""
    from .bearing import WORDS, bears_on

    conn.execute("ALTER TABLE memory_documents ADD COLUMN bears_on TEXT")
    conn.execute("CREATE INDEX memory_documents_bears_on ON memory_documents (bears_on, boundary, updated_at DESC)"
                 " WHERE bears_on IS NOT NULL")
    match = " OR ".join(f'"{w}"' for w in WORDS)
    found = [(bearing, rowid) for rowid, body in conn.execute(
        "SELECT rowid, body FROM memory_documents WHERE deleted_at IS NULL AND rowid IN"
        " (SELECT rowid FROM memory_documents_fts WHERE memory_documents_fts MATCH ?)", (match,)).fetchall()
        if (bearing := bears_on(body))]
    conn.executemany("UPDATE memory_documents SET bears_on = ? WHERE rowid = ?", found)


def _m018_bearings_again(conn: apsw.Connection) -> None:
    """The bearings worked out again by today's rules: an allergy to turtles, snakes or guinea pigs
    bears on a pet, not on food (it had filled a food task's item budget with
    "User is allergic to turtles." ahead of "I am vegan.")."""
    from .bearing import WORDS, bears_on

    match = " OR ".join(f'"{w}"' for w in WORDS)
    changed = [(bearing, rowid) for rowid, body, old in conn.execute(
        "SELECT rowid, body, bears_on FROM memory_documents WHERE deleted_at IS NULL AND rowid IN"
        " (SELECT rowid FROM memory_documents_fts WHERE memory_documents_fts MATCH ?)", (match,)).fetchall()
        if (bearing := bears_on(body)) != old]
    conn.executemany("UPDATE memory_documents SET bears_on = ? WHERE rowid = ?", changed)


MIGRATIONS: list[Migration] = [
    ("001_initial", _m001_initial),
    ("002_observer_runs", _m002_observer_runs),
    ("003_documents_fts_single_update_trigger", _m003_documents_fts_single_update_trigger),
    ("004_browser_ui", _m004_browser_ui),
    ("005_app_state", _m005_app_state),
    ("006_review_and_feedback", _m006_review_and_feedback),
    ("007_recall_term_stats", _m007_recall_term_stats),
    ("008_recall_events_epoch", _m008_recall_events_epoch),
    ("009_boundaries_in_nfc", _m009_boundaries_in_nfc),
    ("010_token_names_of_live_tokens", _m010_token_names_of_live_tokens),
    ("011_curation_events_session", _m011_curation_events_session),
    ("012_anchor_merge_moves", _m012_anchor_merge_moves),
    ("013_erase_for_good", _m013_erase_for_good),
    ("014_tombstone_fingerprints", _m014_tombstone_fingerprints),
    ("015_tombstone_fingerprints_third_person", _m015_tombstone_fingerprints_third_person),
    ("016_tombstones_memory", _m016_tombstones_memory),
    ("017_documents_bears_on", _m017_documents_bears_on),
    ("018_bearings_again", _m018_bearings_again),
]


def migrate(conn: apsw.Connection, now_ms: int, migrations: list[Migration] | None = None) -> list[str]:
    """Apply every migration not yet recorded; return the names applied (empty when current)."""
    migrations = MIGRATIONS if migrations is None else migrations
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
    )
    applied = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    done = []
    for name, fn in migrations:
        if name in applied:
            continue
        with conn:
            fn(conn)
            conn.execute("INSERT INTO _migrations(name, applied_at) VALUES (?, ?)", (name, now_ms))
        done.append(name)
    return done
