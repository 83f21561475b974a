"""The models page's long work: a download from the hub and a switch of the embedder run as jobs
whose partial polls itself, and says when the list below must reload."""

from __future__ import annotations

import io
import re

import pytest

from keepmind.engine import open_engine
from keepmind.engine.models import manifest as manifests
from keepmind.engine.settings import defaults
from support.pages import signed_in

REPO, REV = "keepmind-tests/tiny-embed", "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def served(tmp_path, tiny, hub, clock):
    """A home that knows tiny-embed (published on the fake hub, not installed) and has tiny-other."""
    src = tmp_path / "published"
    tiny.write_tokenizer(src)
    tiny.write_embedder(src / "model.onnx")
    home = tmp_path / "home"
    manifests.save_custom(home / "models", manifests.parse(
        tiny.manifest_obj("tiny-embed", src, hub={"repo": REPO, "revision": REV})))
    for path, name in (("onnx/model.onnx", "model.onnx"), ("vocab.txt", "vocab.txt"),
                       ("tokenizer.json", "tokenizer.json")):
        hub.add(REPO, REV, path, (src / name).read_bytes())
    tiny.install_tiny(home / "models", "tiny-other", seed=11, dims=8)
    settings = defaults().with_overrides(memory__embeddings__model_id="tiny-other")
    engine = open_engine(home, settings=settings, clock=clock, start_workers=False)
    engine.models.hub_endpoint = hub.url
    engine.models.load()
    yield engine
    engine.close()


def test_a_download_runs_as_a_job_whose_partial_polls_until_it_ends(served):
    client, token = signed_in(served)
    page = client.get("/models").get_data(as_text=True)
    assert 'aria-label="Download tiny-embed"' in page
    r = client.post("/models/tiny-embed/download", data={"csrf_token": token}, headers={"HX-Request": "true"})
    job_id = re.search(r'id="job-(job-[0-9a-f]+)"', r.get_data(as_text=True)).group(1)
    done = served.jobs.wait(job_id, 30)
    assert done.state == "done", done.error
    final = client.get(f"/jobs/{job_id}?poll=1", headers={"HX-Request": "true"})
    assert final.headers["HX-Trigger"] == "models-changed" and 'hx-trigger="every 1s"' not in final.get_data(as_text=True)
    states = {m["id"]: m["state"] for m in served.model_catalog()}
    assert states["tiny-embed"] == "verified" and states["tiny-other"] == "active"


def test_switching_the_embedder_from_the_page_reembeds_with_progress(served):
    sid = served.open_session("personal", "work")
    for i in range(3):
        served.store(sid, f"n{i}", f"dark mode {i}")
    client, token = signed_in(served)
    r = client.post("/models/tiny-embed/download", data={"csrf_token": token}, headers={"HX-Request": "true"})
    served.jobs.wait(re.search(r'id="job-(job-[0-9a-f]+)"', r.get_data(as_text=True)).group(1), 30)
    r = client.post("/models/tiny-embed/switch", data={"csrf_token": token}, headers={"HX-Request": "true"})
    text = r.get_data(as_text=True)
    assert "Switching to tiny-embed" in text
    job_id = next(j.id for j in served.jobs.list() if j.kind == "model-switch")
    done = served.jobs.wait(job_id, 30)
    assert done.state == "done" and done.done == done.total == 3
    assert served.models.embedder().model_id == "tiny-embed"
    assert {m["id"]: m["state"] for m in served.model_catalog()}["tiny-embed"] == "active"
    assert "tiny-embed is active: embedded 3" in client.get(f"/jobs/{job_id}").get_data(as_text=True)


def test_a_finished_jobs_card_leaves_the_page_after_an_hour(served, clock):
    client, token = signed_in(served)
    r = client.post("/models/tiny-embed/download", data={"csrf_token": token}, headers={"HX-Request": "true"})
    job_id = re.search(r'id="job-(job-[0-9a-f]+)"', r.get_data(as_text=True)).group(1)
    assert served.jobs.wait(job_id, 30).state == "done"
    assert f'id="job-{job_id}"' in client.get("/models").get_data(as_text=True)
    clock.advance(61 * 60 * 1000)
    assert f'id="job-{job_id}"' not in client.get("/models").get_data(as_text=True)


def test_failed_uploads_in_a_row_leave_one_card_the_latest(served):
    client, token = signed_in(served)
    ids = []
    for attempt in range(3):
        r = client.post("/models/upload", headers={"HX-Request": "true"},
                        data={"csrf_token": token, "as_id": "mine",
                              "files": [(io.BytesIO(b"not an onnx graph %d" % attempt), "model.onnx")]})
        assert r.status_code == 200, r.get_data(as_text=True)
        job = next(j for j in served.jobs.list() if j.kind == "model-import" and j.id not in ids)
        assert served.jobs.wait(job.id, 30).state == "failed"
        ids.append(job.id)
    page = client.get("/models").get_data(as_text=True)
    assert [i for i in ids if f'id="job-{i}"' in page] == [ids[-1]]
    assert "found no vocab.txt or tokenizer.json" in page


def test_a_download_after_a_failed_upload_shows_its_own_card_alone(served, clock):
    """A failed upload's card stayed under the download started after it, on the page and in the list
    the download's end reloads."""
    client, token = signed_in(served)
    client.post("/models/upload", headers={"HX-Request": "true"},
                data={"csrf_token": token, "as_id": "mine", "files": [(io.BytesIO(b"not an onnx graph"), "model.onnx")]})
    upload = next(j for j in served.jobs.list() if j.kind == "model-import")
    assert served.jobs.wait(upload.id, 30).state == "failed"
    assert f'id="job-{upload.id}"' in client.get("/models").get_data(as_text=True)  # news until more work starts
    clock.advance(5_000)
    r = client.post("/models/tiny-embed/download", data={"csrf_token": token}, headers={"HX-Request": "true"})
    download = re.search(r'id="job-(job-[0-9a-f]+)"', r.get_data(as_text=True)).group(1)
    assert f'id="job-{upload.id}"' not in r.get_data(as_text=True)
    served.jobs.wait(download, 30)
    page = client.get("/models", headers={"HX-Request": "true"}).get_data(as_text=True)  # what models-changed reloads
    assert f'id="job-{download}"' in page and f'id="job-{upload.id}"' not in page
    assert "Importing uploaded model files" not in page
