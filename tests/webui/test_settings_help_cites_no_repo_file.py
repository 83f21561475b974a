"""The settings page explains itself in words: a walk read "DESIGN.md's 0.7 cosine…" in a help
text, a file a person who installed Keepmind does not have."""

from __future__ import annotations

import json
import re

import pytest

from keepmind.engine import settings as st
from keepmind.engine.errors import SettingsError
from support.pages import sign_in

REPO_FILE = re.compile(r"[\w./-]+\.md\b|\bnetclaw\b|\bDESIGN\b|\bSTYLE\b", re.IGNORECASE)


def test_no_setting_help_or_settings_message_names_a_file_of_the_source_tree(client, engine, tmp_path):
    sign_in(client, engine)
    page = re.sub(r"<[^>]+>", " ", client.get("/settings").get_data(as_text=True))
    assert REPO_FILE.findall(page) == []
    assert [k.name for k in st.KEYS if REPO_FILE.search(k.doc)] == []
    assert "0.7 x similarity of meaning + 0.3 x matching words" in page  # what fused ranking is, said in place
    (tmp_path / "keepmind.json").write_text(json.dumps({"memory.recall.rankng": "fused"}))
    warnings = st.load(tmp_path / "keepmind.json").warnings
    assert warnings and not [w for w in warnings if REPO_FILE.search(w)]
    with pytest.raises(SettingsError) as refused:
        st.save_changes(tmp_path / "keepmind.json", {"memory.recall.rankng": "fused"})
    assert "the Settings page lists every setting" in str(refused.value)
    assert not REPO_FILE.search(str(refused.value))
