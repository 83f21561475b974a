"""Doctor checks say what is wrong and what to do."""

from keepmind.engine import open_engine
from keepmind.engine.doctor import BACKLOG_WARN, run_checks
from keepmind.engine.settings import defaults
from keepmind.engine.writepath.checkpoints import enqueue


def by_name(engine):
    return {c.name: c for c in run_checks(engine)}


def test_fresh_store_passes_database_and_backlog(engine):
    checks = by_name(engine)
    assert checks["Database"].level == "pass" and "integrity ok" in checks["Database"].message
    assert checks["Checkpoint backlog"].level == "pass"


def test_backlog_above_threshold_warns(engine):
    def fill(conn):
        for i in range(BACKLOG_WARN + 1):
            enqueue(conn, trigger="explicit-memory-request", payload={"title": f"t{i}", "content": f"fact {i}"},
                    audience="personal", boundary="work", session_id=None, now=engine.now())
    engine.write(fill)
    check = by_name(engine)["Checkpoint backlog"]
    assert check.level == "warning" and f"{BACKLOG_WARN + 1} checkpoints waiting" in check.message
    assert "check the Curation LLM below and the logs" in check.message


def test_embeddings_disabled_passes_and_missing_model_warns(home, clock):
    off = defaults().with_overrides(memory__embeddings__enabled=False)
    with open_engine(home / "a", settings=off, clock=clock, start_workers=False) as eng:
        assert by_name(eng)["Embeddings"].level == "pass"
    on = defaults().with_overrides(memory__embeddings__auto_download=False)
    with open_engine(home / "b", settings=on, clock=clock, start_workers=False) as eng:
        eng.models.load(download=False)
        check = by_name(eng)["Embeddings"]
        assert check.level == "error" and "lexical-only" in check.message


def test_offline_model_reports_coverage(offline_models_home, clock):
    with open_engine(offline_models_home, settings=defaults(), clock=clock, start_workers=False) as eng:
        eng.models.load(download=False)
        sid = eng.open_session("personal", "work")
        eng.store(sid, "Editor", "prefers dark mode")
        check = by_name(eng)["Embeddings"]
        assert "all-minilm-l6-v2" in check.message and "1/1 memories embedded" in check.message


def test_offline_feature_gate_counts_as_a_gate(offline_models_home, clock):
    settings = defaults().with_overrides(memory__embeddings__auto_download=False)
    with open_engine(offline_models_home, settings=settings, clock=clock, start_workers=False) as eng:
        eng.models.load(download=False)
        check = by_name(eng)["Relevance gate"]
        assert check.level == "pass" and "offline feature gate" in check.message


def test_without_an_embedder_doctor_says_the_lexical_gate_decides(home, clock):
    with open_engine(home, settings=defaults().with_overrides(memory__embeddings__auto_download=False),
                     clock=clock, start_workers=False) as eng:
        eng.models.load(download=False)
        check = by_name(eng)["Relevance gate"]
        assert check.level == "warning" and "recall is lexical" in check.message
        assert "the lexical gate decides" in check.message
    with open_engine(home, settings=defaults().with_overrides(memory__embeddings__enabled=False),
                     clock=clock, start_workers=False) as eng:
        check = by_name(eng)["Relevance gate"]
        assert check.level == "pass" and check.message.startswith("embeddings are off: recall is lexical")
    with open_engine(home, settings=defaults().with_overrides(memory__recall__gate__enabled=False),
                     clock=clock, start_workers=False) as eng:
        assert by_name(eng)["Relevance gate"].message == "off (setting): the floor's output is injected"
