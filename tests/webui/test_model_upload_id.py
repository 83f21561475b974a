"""Files no manifest knows: the error says what to do where it is read. The models page's upload
form takes the id to register them under (no CLI flag to look up), and the CLI names its flag."""

from __future__ import annotations

import io
import re

import pytest

from keepmind.desktop.cli import main as cli
from keepmind.engine.models import manifest as manifests
from support.pages import sign_in

ADVICE = "to use it anyway, register it as a custom, uncalibrated model under an id you choose"


@pytest.fixture
def unknown(tmp_path, tiny):
    """The files of an embedding model that no manifest knows."""
    src = tmp_path / "mine"
    tiny.write_tokenizer(src)
    tiny.write_embedder(src / "model.onnx", seed=3)
    return src


def upload(client, token, folder, **fields):
    files = [(io.BytesIO((folder / n).read_bytes()), n) for n in ("model.onnx", "vocab.txt", "tokenizer.json")]
    return client.post("/models/upload", data={"csrf_token": token, "files": files, **fields},
                       content_type="multipart/form-data", headers={"HX-Request": "true"})


def finished(engine, client, token, folder, **fields):
    """The import job an upload started, once it ended."""
    before = {j.id for j in engine.jobs.list()}
    response = upload(client, token, folder, **fields)
    assert response.status_code == 200, response.get_data(as_text=True)
    [job] = [j for j in engine.jobs.list() if j.id not in before]
    assert f'id="job-{job.id}"' in response.get_data(as_text=True)  # its progress shows on the page
    return engine.jobs.wait(job.id, 30)


def test_the_upload_form_takes_the_id_the_error_asks_for(client, engine, unknown):
    token = sign_in(client, engine)
    page = client.get("/models").get_data(as_text=True)
    assert re.search(r'<label for="model-as-id">Id for a custom model', page) and 'name="as_id"' in page
    failed = finished(engine, client, token, unknown)
    assert failed.state == "failed" and failed.error.endswith(ADVICE)
    assert "--as" not in failed.error  # no command-line flag on a web page
    assert ADVICE in client.get(f"/jobs/{failed.id}").get_data(as_text=True)

    r = upload(client, token, unknown, as_id="Not An Id!")
    assert r.status_code == 422 and "is not a usable model id" in r.get_data(as_text=True)
    done = finished(engine, client, token, unknown, as_id="my-model")
    assert done.state == "done", done.error
    assert "installed my-model as a custom, uncalibrated model" in done.message
    assert manifests.get(engine.models.models_dir, "my-model").custom


def test_the_command_line_names_its_flag(tmp_path, unknown, capsys):
    assert cli(["models", "import", str(unknown), "--home", str(tmp_path / "home")]) == 2
    err = capsys.readouterr().err
    assert f"{ADVICE} (--as ID)" in err
    assert cli(["models", "import", str(unknown), "--as", "my-model", "--home", str(tmp_path / "home")]) == 0
