"""The JSON API under /api/v1: sessions, recall, the four memory tools, checkpoints, what was
deleted as wrong, and tokens.

Each route is declared once with `@route(...)` (registry.py): the declaration registers the Flask
view and records the operation (request and response schema) that openapi.py publishes. Every session
route goes through `security.session_scope`, so the calling token's ceiling is checked against
the session's audience and boundary on every call, whoever opened the session.
"""

from __future__ import annotations

import json
import os
import re
import sys
from urllib.parse import quote

from flask import current_app, jsonify, request

from keepmind import version
from keepmind.engine import AUDIENCES, InvalidInput, NotFound, ScopeError, Token
from keepmind.engine.recall import RecallResult

from . import openapi, schemas
from .context import engine
from .registry import Registry
from .security import current_token, instance_proof, refuse_revoking_the_local_token, session_scope, signins
from .signin import CODE_TTL_S

registry = Registry("api_v1", __name__)
api = registry.blueprint
route = registry.route
OPERATIONS = registry.operations


class LongNumber(int):
    """A whole number in a body with more digits than Python converts (sys.get_int_max_str_digits()):
    valid JSON, so never "the body is not valid JSON". It stands in as 10 ** that limit, of the same
    sign: no further from zero than the number itself, beyond every field's bounds, so the field
    refuses it in its usual words ("limit must be at most 100")."""

    digits: int

    def __new__(cls, text: str):
        beyond = 10 ** sys.get_int_max_str_digits()
        number = super().__new__(cls, -beyond if text.startswith("-") else beyond)
        number.digits = len(text.lstrip("-"))
        return number


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # json matched the text as an integer: only its length can be wrong
        return LongNumber(text)


def _refuse_long_numbers(value, where: str = "body") -> None:
    """A LongNumber the schema let through (a field without bounds) never reaches a route."""
    if isinstance(value, LongNumber):
        raise InvalidInput(f"{where} is a number of {value.digits} digits: more than the "
                           f"{sys.get_int_max_str_digits()} a number here may have")
    if isinstance(value, dict):
        for name, item in value.items():
            _refuse_long_numbers(item, name if where == "body" else f"{where}.{name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _refuse_long_numbers(item, f"{where}[{i}]")


def body(schema_name: str) -> dict:
    """The request's JSON object, checked against its schema (an empty body reads as {})."""
    raw = request.get_data(cache=False)
    if not raw.strip():
        data = {}
    else:
        try:
            data = json.loads(raw, parse_int=_whole_number)
        except (ValueError, UnicodeDecodeError):
            raise InvalidInput("the body is not valid JSON: send a JSON object") from None
        except RecursionError:
            raise InvalidInput("the body is nested too deeply") from None
    try:
        schemas.check_text(data)
        schemas.validate(data, schemas.REQUESTS[schema_name])
        _refuse_long_numbers(data)
    except RecursionError:
        raise InvalidInput("the body is nested too deeply") from None
    return data


def query(schema_name: str) -> dict:
    """The request's query parameters (the first of each), checked against their schemas
    (schemas.QUERIES): a whole number where one is wanted, an unknown one refused by name."""
    wanted = schemas.QUERIES[schema_name]
    out = {}
    for name in request.args:
        if name not in wanted:
            raise InvalidInput(f"unknown query parameter {name!r}; allowed: {', '.join(wanted)}")
        value = request.args[name]
        if wanted[name].get("type") == "integer" and re.fullmatch(r"-?[0-9]+", value.strip()):
            value = _whole_number(value.strip())
        schemas.check_text(value, name)
        schemas.validate(value, wanted[name], name)
        _refuse_long_numbers(value, name)
        out[name] = value
    return out


def writable(scope) -> None:
    """Public sessions are inert: nothing they send becomes memory."""
    if scope.inert:
        raise ScopeError("public sessions cannot write memory: open a personal or team session")


def reply(**fields):
    return jsonify({"ok": True, **fields})


def store_result(result) -> dict:
    return {"id": getattr(result, "id", None), "action": str(getattr(result, "action", "")),
            "reason": str(getattr(result, "reason", "") or ""),
            "checkpoint_id": getattr(result, "checkpoint_id", None)}


# -- status ---------------------------------------------------------------------------------------


@route("GET", "/status", summary="Health of the memory subsystem and the version", response="Status",
       tag="status")
def status():
    return reply(memory=engine().status(), version=version(), token=current_token().as_dict())


@route("POST", "/pause", summary="Pause memory: no turns recorded, nothing queued, nothing recalled",
       request_schema="Empty", response="Status", tag="status", body_required=False)
def pause():
    body("Empty")
    require_owner()
    engine().pause()
    return reply(memory=engine().status(), version=version(), token=current_token().as_dict())


@route("POST", "/resume", summary="Resume memory after a pause", request_schema="Empty", response="Status",
       tag="status", body_required=False)
def resume():
    body("Empty")
    require_owner()
    engine().resume()
    return reply(memory=engine().status(), version=version(), token=current_token().as_dict())


@route("GET", "/stats", summary="Counts of the whole store, and what was formed and recalled since the server "
       "started (the local token only)", response="Stats", tag="status")
def stats():
    require_owner()
    return reply(stats=engine().stats(), started_at=engine().started_at)


@route("POST", "/shutdown", summary="Stop this Keepmind cleanly, as `keepmind stop` does (the local token "
       "only): the answer comes first, then the server, the workers and the database close in order",
       request_schema="Empty", response="Stopping", tag="status", body_required=False)
def shutdown():
    body("Empty")
    require_owner()
    stop = current_app.config.get("KEEPMIND_SHUTDOWN")
    if stop is None:
        raise NotFound("this server cannot be stopped over the API: stop the program that runs it")
    stop()  # only asks: the process's main loop stops the server after this answer is sent
    return reply(stopping=True, pid=os.getpid())


def require_owner() -> None:
    """Pausing memory is the person's switch: only a personal, any-boundary token (the local one)."""
    token = current_token()
    if token.audience_ceiling != "personal" or not token.any_boundary:
        raise ScopeError("only a personal token for every boundary (the local token) can do this: it acts on "
                         "the whole store")


@route("POST", "/hello", summary="Prove this is the server the data dir's server.json names (no token: "
       "clients call it before they send one); the proof is HMAC-SHA256(server.json's nonce, challenge)",
       request_schema="HelloChallenge", response="HelloProof", tag="status", public=True)
def hello():
    data = body("HelloChallenge")
    nonce = current_app.config.get("KEEPMIND_NONCE")
    if not nonce:
        raise NotFound("this server was not started by `keepmind serve`: it has no server.json to prove")
    return reply(service="keepmind", proof=instance_proof(nonce, data["challenge"]))


@route("GET", "/openapi.json", summary="The OpenAPI 3.1 document of this API", response="OpenAPI", tag="status")
def openapi_json():
    return jsonify(openapi.document(OPERATIONS, version()))


# -- sessions -------------------------------------------------------------------------------------


@route("POST", "/sessions", summary="Open a session in an audience and boundary the token allows",
       request_schema="SessionOpen", response="Session", tag="sessions")
def open_session():
    data = body("SessionOpen")
    sid = engine().open_session(data["audience"], data["boundary"], channel=data.get("channel"),
                                title=data.get("title"), token=current_token())
    return reply(session={"id": sid, "audience": data["audience"], "boundary": engine().scope(sid).boundary,
                          "status": "open"})


@route("POST", "/sessions/<session_id>/turns", summary="Record a completed turn (user and assistant)",
       request_schema="Turn", response="TurnAdded", tag="sessions")
def add_turn(session_id):
    session_scope(session_id)
    data = body("Turn")
    index = engine().add_turn(session_id, user=data.get("user", ""), assistant=data.get("assistant", ""),
                              tools=data.get("tools"), recalled_ids=data.get("recalled_ids"),
                              skills=data.get("skills"))
    return reply(turn=index, recorded=index > 0)


@route("POST", "/sessions/<session_id>/end", summary="End a session (it is distilled one last time)",
       request_schema="Empty", response="Session", tag="sessions", body_required=False)
def end_session(session_id):
    scope = session_scope(session_id)
    body("Empty")
    engine().end_session(session_id)
    return reply(session={"id": session_id, "audience": scope.audience, "boundary": scope.boundary,
                          "status": "ended"})


@route("POST", "/sessions/<session_id>/compaction", summary="Queue a compaction summary for curation",
       request_schema="Compaction", response="Stored", tag="sessions")
def compaction(session_id):
    writable(session_scope(session_id))
    data = body("Compaction")
    return reply(result=store_result(engine().compact(session_id, data["summary"])))


@route("POST", "/sessions/<session_id>/findings", summary="Queue findings a parent agent accepted",
       request_schema="Findings", response="FindingsStored", tag="sessions")
def findings(session_id):
    writable(session_scope(session_id))
    data = body("Findings")
    return reply(results=[store_result(r) for r in engine().add_findings(session_id, data["findings"])])


@route("POST", "/sessions/<session_id>/recall", summary="The memories that bear on this message, as a block",
       request_schema="Recall", response="RecallResult", tag="recall")
def recall(session_id):
    scope = session_scope(session_id)
    data = body("Recall")
    if scope.inert or not engine().enabled:
        # Public sessions and a disabled memory get nothing; the healthy "no block" answer.
        return reply(**RecallResult(None, [], None, []).as_dict())
    if engine().paused:
        return reply(**RecallResult(None, [], None, ["memory_paused"]).as_dict())
    return reply(**engine().recall(session_id, data["message"], data.get("context"), token=current_token()).as_dict())


@route("GET", "/sessions/<session_id>/receipts/<receipt_id>",
       summary="Why recall injected (or dropped) what it did: the stored receipt of one recall",
       response="Receipt", tag="recall")
def recall_receipt(session_id, receipt_id):
    return reply(receipt=engine().explain(receipt_id, session_id=session_id, token=current_token()))


# -- the four memory tools ------------------------------------------------------------------------


@route("POST", "/sessions/<session_id>/tools/find_memories",
       summary="Search the memories this session may see (lexical, best first)",
       request_schema="FindMemories", response="Found", tag="tools")
def find_memories(session_id):
    scope = session_scope(session_id)
    data = body("FindMemories")
    items = engine().find(scope, data["query"], limit=int(data.get("limit", 5)),
                          include_expired=data.get("include_expired", False))
    return reply(items=[_memory(i) for i in items], count=len(items))


@route("POST", "/sessions/<session_id>/tools/get_memories",
       summary="Memories by id, copied verbatim (a record id resolves to its newest version)",
       request_schema="GetMemories", response="Got", tag="tools")
def get_memories(session_id):
    scope = session_scope(session_id)
    data = body("GetMemories")
    got = engine().get(scope, data["ids"])
    return reply(items=[_memory(i) for i in got.items],
                 missing=[{"id": raw, "reason": why} for raw, why in got.missing])


@route("POST", "/sessions/<session_id>/tools/store_memory",
       summary="Ask Keepmind to remember something (queued for curation at top priority)",
       request_schema="StoreMemory", response="Stored", tag="tools")
def store_memory(session_id):
    scope = session_scope(session_id)
    data = body("StoreMemory")
    writable(scope)
    result = engine().store_memory(scope, data.get("title", ""), data["content"], tags=data.get("tags"))
    return reply(result=store_result(result))


@route("POST", "/sessions/<session_id>/tools/update_memory",
       summary="Replace text in, rewrite, retitle or delete a memory this session may see",
       request_schema="UpdateMemory", response="Updated", tag="tools")
def update_memory(session_id):
    scope = session_scope(session_id)
    data = body("UpdateMemory")
    result = engine().update(scope, data["id"], old_text=data.get("old_text"), new_text=data.get("new_text"),
                             new_content=data.get("new_content"), title=data.get("title"),
                             delete=data.get("delete", False))
    return reply(result={"id": result.id, "action": result.action, "new_id": result.new_id,
                         "replacements": result.replacements, "revision": result.revision,
                         "reason": result.reason})


def _memory(item) -> dict:
    out = item.as_dict()
    out["score"] = item.score
    return out


# -- checkpoints ----------------------------------------------------------------------------------


@route("GET", "/checkpoints", summary="Checkpoint counts by state and the pending list",
       response="Checkpoints", tag="status")
def checkpoints():
    overview = engine().checkpoint_overview(token=current_token())
    return reply(counts=overview["counts"], pending=overview["pending"])


@route("GET", "/checkpoints/<checkpoint_id>",
       summary="One checkpoint: its state and, once curated, the ids of the memories it formed",
       response="Checkpoint", tag="status")
def checkpoint(checkpoint_id):
    return reply(checkpoint=engine().checkpoint(checkpoint_id, token=current_token()))


# -- what was deleted as wrong --------------------------------------------------------------------
# The Deleted page's list, Restore and Erase for good, for scripts and the CLI. Like /checkpoints,
# they take no session: the calling token's ceiling and boundaries are the scope, and a tombstone
# beyond them is "no deleted memory", exactly as one that does not exist. No MCP tool erases: an
# agent's tools delete as wrong at most; erasing for good is a person's (the page, the CLI, a script).

NO_SUCH_DELETION = ("no deleted memory {}: it was restored already, or it is not yours to see "
                    "(GET /api/v1/deleted lists them)")
CONFIRM_ERASE = 'erasing for good cannot be undone: send the body {"confirm": "erase"} to go on'
ERASED_TITLE = "(erased)"


def deleted_item(t: dict) -> dict:
    """One deletion as the API and `keepmind memories deleted --json` show it."""
    erased = t.get("erased_at") is not None
    return {"tombstone_id": t["tombstone_id"], "memory_id": t.get("memory_id"),
            "title": ERASED_TITLE if erased else (t.get("title") or ""),
            "content": None if erased else t.get("body"), "class": t.get("memory_class"),
            "audience": t["audience"], "boundary": t["boundary"], "deleted_at": t["created_at"],
            "deleted_by": t.get("source"), "reason": t.get("reason"), "erased_at": t.get("erased_at")}


def erased_result(erased: dict) -> dict:
    """What Engine.erase returns, as the API answers it: the counts apart from the ids."""
    counts = {k: v for k, v in erased.items()
              if k not in ("tombstone_id", "memory_id", "ids", "scrubbed") and isinstance(v, int)
              and not isinstance(v, bool)}
    return {"tombstone_id": erased["tombstone_id"], "memory_id": erased.get("memory_id"), "counts": counts,
            "scrubbed": bool(erased.get("scrubbed"))}


def _on_deletion(act, tombstone_id: str):
    """`act(tombstone_id, token=...)` (Engine.restore or erase) as the calling token; an unknown
    tombstone and one beyond the token answer the same 404, naming the id."""
    try:
        return act(tombstone_id, token=current_token())
    except NotFound:
        raise NotFound(NO_SUCH_DELETION.format(tombstone_id)) from None


@route("GET", "/deleted", summary="What was deleted as wrong and not restored, newest first, as the token may "
       "see; keyset pages: ?limit=, and ?before= the next_before of the page before",
       response="Deleted", query="DeletedPage", tag="deleted")
def deleted_memories():
    args = query("DeletedPage")
    found, next_before = engine().deleted(token=current_token(), cursor=args.get("before"),
                                          limit=int(args.get("limit", 50)))
    return reply(deleted=[deleted_item(t) for t in found], next_before=next_before)


@route("POST", "/deleted/<tombstone_id>/restore", summary="Restore a memory deleted as wrong: it is recalled "
       "again, and the same fact may be learnt again (refused once it was erased for good)",
       request_schema="Empty", response="Restored", tag="deleted", body_required=False)
def restore_deleted(tombstone_id):
    body("Empty")
    memory_id = _on_deletion(engine().restore, tombstone_id)
    return reply(restored={"tombstone_id": tombstone_id, "memory_id": memory_id})


@route("POST", "/deleted/<tombstone_id>/erase", summary='Erase for good the text of a memory deleted as wrong, '
       'everywhere Keepmind keeps it, and rewrite the database file without it (VACUUM). It cannot be undone: '
       'send {"confirm": "erase"}. The tombstone stays, so the same claim is still not learnt again',
       request_schema="EraseConfirm", response="Erased", tag="deleted")
def erase_deleted(tombstone_id):
    try:
        body("EraseConfirm")
    except InvalidInput as exc:
        said = exc.message.replace("must be one of erase", 'must be the word "erase"')
        raise InvalidInput(f"{said}; {CONFIRM_ERASE}") from None
    return reply(erased=erased_result(_on_deletion(engine().erase, tombstone_id)))


# -- tokens ---------------------------------------------------------------------------------------


@route("GET", "/tokens", summary="The live tokens no wider than the calling token", response="Tokens",
       tag="tokens")
def list_tokens():
    return reply(tokens=[t.as_dict() for t in engine().list_tokens(by=current_token())])


@route("POST", "/tokens", summary="Create a token no wider than the calling token (the secret is shown once)",
       request_schema="TokenCreate", response="TokenCreated", tag="tokens")
def create_token():
    data = body("TokenCreate")
    caller = current_token()
    try:
        created = engine().create_token(data["name"], data["audience_ceiling"], data.get("boundaries", ["*"]),
                                        by=caller)
    except ScopeError as exc:
        wider = wider_part(caller, data)
        raise ScopeError(f"{exc.message}; {wider}" if wider else exc.message) from None
    return reply(token=created.token.as_dict(), secret=created.secret)


def wider_part(caller: Token, data: dict) -> str:
    """Which part of a new token (POST /tokens `data`, which the engine found valid) is wider than the
    calling token, and what to send instead; "boundaries" left out means every boundary."""
    named = [b.strip() for b in data.get("boundaries", ["*"]) if b.strip()]  # as the engine reads them
    wanted = Token("", data["name"], data["audience_ceiling"], tuple(named), 0)
    said = []
    if not caller.allows_audience(wanted.audience_ceiling):
        narrower = [a for a in AUDIENCES if caller.allows_audience(a)]
        said.append(f"the new token's audience_ceiling {wanted.audience_ceiling} is wider than "
                    f'{caller.audience_ceiling}: send "audience_ceiling": ' + " or ".join(map(json.dumps, narrower)))
    if not caller.any_boundary:
        mine = json.dumps(list(caller.boundaries)) + ("" if len(caller.boundaries) == 1 else " or some of them")
        if wanted.any_boundary:
            what = ('the new token\'s "boundaries" were left out, which means every boundary (["*"])'
                    if "boundaries" not in data else 'the new token\'s "boundaries": ["*"] means every boundary')
            said.append(f'{what}: send "boundaries": {mine}')
        elif beyond := [b for b in wanted.boundaries if not caller.allows_boundary(b)]:
            said.append(f"the new token's {'boundary' if len(beyond) == 1 else 'boundaries'} {', '.join(beyond)} "
                        f"{'is' if len(beyond) == 1 else 'are'} not among this one's: send \"boundaries\": {mine}")
    return "; ".join(said)


@route("POST", "/tokens/<token_id>/revoke", summary="Revoke a token (by id or name) no wider than the caller",
       request_schema="Empty", response="TokenRevoked", tag="tokens", body_required=False)
def revoke_token(token_id):
    body("Empty")
    refuse_revoking_the_local_token(token_id, current_token())
    return reply(token=engine().revoke_token(token_id, by=current_token()).as_dict())


# -- the browser pages ----------------------------------------------------------------------------


@route("POST", "/ui/links", summary="A one-time link that signs a browser in to the pages (60 s, single use)",
       request_schema="SignInLink", response="SignInLinkCreated", tag="ui", body_required=False)
def sign_in_link():
    """`keepmind open` calls this: the code is made here, in the server that will redeem it.

    The pages act with the calling token, or with `as` (a token's name or id) when that token is
    no wider than the caller: a team token cannot open a personal view.
    """
    data = body("SignInLink")
    caller = current_token()
    target = caller
    if data.get("as"):
        target = engine().get_token(data["as"])
        if target.revoked_at is not None:
            raise ScopeError(f"token {target.name!r} is revoked: choose a live token (`keepmind token list`)")
        if not caller.covers(target):
            raise ScopeError(f"token {target.name!r} is wider than the calling token: sign in with a token "
                             "at least as wide")
    code = signins().issue_code(target.id)
    landing = f"&next={quote(data['next'], safe='/')}" if data.get("next") else ""
    return reply(url=f"http://{request.host}/signin?code={code}{landing}", expires_in=int(CODE_TTL_S),
                 token=target.as_dict())
