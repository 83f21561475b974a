"""Downloads from a fake hub on loopback: verified, atomic, recoverable, and never when switched off."""

import dataclasses
import time
import types

import pytest

from keepmind.engine.models import manifest as manifests
from keepmind.engine.models.download import download_model
from keepmind.engine.models.manifest import ModelError
from keepmind.engine.models.verify import verify_installed
from keepmind.engine.settings import defaults

REPO, REV = "keepmind-tests/tiny-embed", "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def published(tmp_path, tiny, hub):
    """A tiny model published on the fake hub, and its manifest (pinned to REV)."""
    src = tmp_path / "published"
    tiny.write_tokenizer(src)
    tiny.write_embedder(src / "model.onnx")
    man = manifests.parse(tiny.manifest_obj("tiny-embed", src, hub={"repo": REPO, "revision": REV}))
    hub.add(REPO, REV, "onnx/model.onnx", (src / "model.onnx").read_bytes())
    hub.add(REPO, REV, "vocab.txt", (src / "vocab.txt").read_bytes())
    hub.add(REPO, REV, "tokenizer.json", (src / "tokenizer.json").read_bytes())
    return man


def _leftovers(models_dir):
    return sorted(str(p.relative_to(models_dir)) for p in models_dir.rglob("*")) if models_dir.exists() else []


def test_download_verifies_reports_progress_and_installs_atomically(tmp_path, hub, published):
    models = tmp_path / "models"
    events = []
    result = download_model(models, published, endpoint=hub.url,
                            progress=lambda name, done, total: events.append((name, done, total)))
    assert result.action == "downloaded" and verify_installed(models, published).ok
    size = published.file("model.onnx").size
    assert ("model.onnx", size, size) in events
    assert _leftovers(models) == ["tiny-embed", "tiny-embed/model.onnx", "tiny-embed/tokenizer.json",
                                  "tiny-embed/vocab.txt"]
    methods = {(m, p.split("/resolve/")[1]) for m, p, _ in hub.requests}
    assert ("HEAD", f"{REV}/onnx/model.onnx") in methods and ("GET", f"{REV}/onnx/model.onnx") in methods
    hub.requests.clear()
    again = download_model(models, published, endpoint=hub.url)
    assert again.action == "already-installed" and hub.requests == []


def test_a_hash_mismatch_is_rejected_and_leaves_nothing_behind(tmp_path, hub, published):
    good = hub.files[(REPO, REV, "onnx/model.onnx")]
    hub.add(REPO, REV, "onnx/model.onnx", good[:-1] + bytes([good[-1] ^ 0xFF]))  # same size, other bytes
    models = tmp_path / "models"
    with pytest.raises(ModelError, match=r"model\.onnx has sha256 .* was not installed"):
        download_model(models, published, endpoint=hub.url)
    assert _leftovers(models) == []


def test_a_download_interrupted_mid_file_is_recovered_on_the_next_try(tmp_path, hub, published):
    models = tmp_path / "models"

    def interrupt(name, done, total):
        if name == "model.onnx" and done > 0:  # bytes are arriving, none written yet
            raise KeyboardInterrupt  # the person pressed Ctrl-C, or the process is going down

    with pytest.raises(KeyboardInterrupt):
        download_model(models, published, endpoint=hub.url, progress=interrupt)
    assert _leftovers(models) == []
    assert download_model(models, published, endpoint=hub.url).action == "downloaded"
    assert verify_installed(models, published).ok


def test_a_connection_dropped_mid_file_resumes_with_a_range_request(tmp_path, hub, published, monkeypatch):
    import huggingface_hub.file_download as fd

    no_wait = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if not k.startswith("_")})
    no_wait.sleep = lambda _s: None  # the library backs off 1 s before resuming; not in a test
    monkeypatch.setattr(fd, "time", no_wait)
    monkeypatch.setattr(fd.constants, "DOWNLOAD_CHUNK_SIZE", 512)  # so bytes land before the cut
    hub.cut_next_get = True
    models = tmp_path / "models"
    assert download_model(models, published, endpoint=hub.url).action == "downloaded"
    assert verify_installed(models, published).ok
    gets = [rng for m, p, rng in hub.requests if m == "GET" and p.endswith("/onnx/model.onnx")]
    half = published.file("model.onnx").size // 2
    assert len(gets) == 2 and gets[1] is not None  # the cut one (half the bytes), then a resume:
    assert int(gets[1].split("=")[1].split("-")[0]) in range(half - 512, half + 1)  # from where it broke


def test_a_hub_answering_another_commit_than_the_pinned_one_is_refused(tmp_path, hub, published):
    hub.commit = "f" * 40
    models = tmp_path / "models"
    with pytest.raises(ModelError, match="instead of the pinned"):
        download_model(models, published, endpoint=hub.url)
    assert _leftovers(models) == [] and not any(m == "GET" for m, _, _ in hub.requests)


def test_a_file_the_hub_does_not_have_is_a_clear_error(tmp_path, hub, published):
    del hub.files[(REPO, REV, "vocab.txt")]
    models = tmp_path / "models"
    with pytest.raises(ModelError, match="the hub has no vocab.txt"):
        download_model(models, published, endpoint=hub.url)
    assert _leftovers(models) == []


def test_auto_download_tries_the_default_and_degrades_quickly_when_the_hub_lacks_it(tmp_path, hub, clock):
    from keepmind.engine import open_engine

    engine = open_engine(tmp_path / "home", settings=defaults(), clock=clock, start_workers=False)
    engine.models.hub_endpoint = hub.url
    try:
        started = time.monotonic()
        loaded = engine.models.load(download=True)
        assert time.monotonic() - started < 10
        assert loaded.embedder is None
        reasons = " ".join(engine.models.status_reasons())
        assert "download of snowflake-arctic-embed-m-int8 failed" in reasons
        assert any("Snowflake/snowflake-arctic-embed-m/resolve" in p for _, p, _ in hub.requests)
    finally:
        engine.close()


def test_auto_download_off_sends_nothing_to_the_hub(tmp_path, hub, clock):
    from keepmind.engine import open_engine

    settings = defaults().with_overrides(memory__embeddings__auto_download=False)
    engine = open_engine(tmp_path / "home", settings=settings, clock=clock, start_workers=False)
    engine.models.hub_endpoint = hub.url
    engine.models.start()
    try:
        assert engine.models.wait_ready(30)
        engine.models.load(download=True)
        assert engine.models.embedder() is None
    finally:
        engine.close()
    assert hub.requests == []


def test_leftovers_of_a_killed_download_are_cleaned_up_by_the_next_one(tmp_path, hub, published):
    import os

    models = tmp_path / "models"
    stale = models / ".downloads" / "tiny-embed-deadbeef"
    stale.mkdir(parents=True)
    (stale / "model.onnx.incomplete").write_bytes(b"partial")
    stray = models / "tiny-embed" / ".model.onnx.tmp-deadbeef"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"partial")
    old = time.time() - 7 * 3600
    for p in (stale, stray):
        os.utime(p, (old, old))
    assert download_model(models, published, endpoint=hub.url).action == "downloaded"
    assert _leftovers(models) == ["tiny-embed", "tiny-embed/model.onnx", "tiny-embed/tokenizer.json",
                                  "tiny-embed/vocab.txt"]


def test_an_unreachable_hub_is_said_in_words_not_as_the_librarys_exception(tmp_path, published):
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(ModelError) as info:
        download_model(tmp_path / "models", published, endpoint=closed, timeout_s=5)
    said = str(info.value)
    assert "could not reach the Hugging Face hub" in said and "the connection was refused" in said
    assert "ConnectError" not in said and "Errno" not in said
    assert "install-offline" in said  # an embedder: the offline pack is the way on
    gate = dataclasses.replace(published, role="gate")
    with pytest.raises(ModelError) as info:
        download_model(tmp_path / "models", gate, endpoint=closed, timeout_s=5)
    assert str(info.value).endswith("`keepmind models import FOLDER`")  # a gate: bring its folder
