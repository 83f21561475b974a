"""Markdown memory files cut into units of meaning: items keep what is nested under them, a label
keeps its content, tables and code stay whole, headings give context, and what is not a memory
is reported with its reason."""

from __future__ import annotations

from pathlib import Path

from keepmind.engine.mdunits import MAX_UNIT_CHARS, units

DATA = Path(__file__).resolve().parents[1] / "data"


def shapes(text: str) -> list[tuple[str, str]]:
    return [(u.kind, u.text) for u in units(text).units]


def skipped(text: str) -> list[tuple[int, str]]:
    return [(s.line, s.reason) for s in units(text).skipped]


def test_a_bullet_keeps_its_nested_bullets_and_lazy_lines():
    text = ("## Work\n- Works at Acme on billing\n  - Team: Payments Core\n    - 5 people\n"
            "  - On call every other week\n- Lives in Lisbon\nsince 2024\n")
    assert shapes(text) == [
        ("item", "Works at Acme on billing\n- Team: Payments Core\n  - 5 people\n- On call every other week"),
        ("item", "Lives in Lisbon\nsince 2024")]


def test_a_bold_label_and_its_content_are_one_memory_and_a_bare_label_none():
    text = ("**核心功能**:\n- 本地 ONNX 嵌入\n- SQLite 单文件\n\n**技术栈**：\n\n| 层 | 技术 |\n|---|---|\n| 存储 | SQLite |\n\n"
            "**待定**:\n\n## 下一节\n\n- **示例**：\n- 标签和内容在一起\n- 表格不拆开\n")
    found = units(text).units
    assert [(u.kind, u.title) for u in found] == [
        ("labelled", "核心功能: 本地 ONNX 嵌入"), ("labelled", "技术栈"), ("labelled", "示例: 标签和内容在一起")]
    assert found[0].text == "**核心功能**:\n- 本地 ONNX 嵌入\n- SQLite 单文件"
    assert found[1].text == "**技术栈**：\n| 层 | 技术 |\n|---|---|\n| 存储 | SQLite |"
    assert found[2].text == "**示例**：\n- 标签和内容在一起\n- 表格不拆开"
    assert skipped(text) == [(11, "bare label")]


def test_a_lead_in_sentence_keeps_the_code_it_introduces_and_tables_and_code_stay_whole():
    text = ("## Migration\n\nRun the dry run with:\n\n```sh\nmake migrate-dry-run\n\nmake verify\n```\n\n"
            "| Step | Owner |\n|---|---|\n| Schema diff | Sam |\n| Backfill | Dana |\n")
    found = units(text).units
    assert [u.kind for u in found] == ["labelled", "table"]
    assert found[0].text == "Run the dry run with:\n```sh\nmake migrate-dry-run\n\nmake verify\n```"
    assert found[1].title == "Migration: Step · Owner" and found[1].text.count("\n") == 3


def test_separators_empty_headings_front_matter_comments_and_junk_are_not_memories():
    text = ("---\ntitle: x\n---\n\n# Memory\n\n> What this file is for.\n\n## Old project\n\n## Real\n\n- fact one\n\n"
            "***\n\n<!-- a comment\nover lines -->\n\n- —\n\n## Empty at the end\n")
    assert shapes(text) == [("item", "fact one")]
    assert skipped(text) == [(1, "front matter"), (7, "file description"), (9, "empty heading"),
                             (15, "separator"), (17, "comment"), (20, "no text"), (22, "empty heading")]


def test_titles_come_from_the_units_own_text_with_the_nearest_heading_and_no_date():
    text = ("# 2026-02-11\n\n## 今天做了什么\n\n- 完成了召回收据功能\n\n**示例**：\n\n- 导入时标签和内容要在一起\n\n"
            "## Later\n\n- a very long bullet " + "that goes on " * 20 + "\n")
    found = units(text).units
    assert found[0].title == "今天做了什么: 完成了召回收据功能" and found[0].section == ("今天做了什么",)
    assert found[1].title == "示例: 导入时标签和内容要在一起"
    assert len(found[2].title) <= 100 and found[2].title.endswith("…") and "2026" not in found[2].title


def test_a_unit_too_long_to_inject_is_cut_between_items_each_part_keeping_its_label():
    items = "".join(f"- item {n}: " + "word " * 30 + "\n" for n in range(40))
    found = units("**Big list**:\n" + items).units
    assert len(found) > 1 and all(len(u.text) <= MAX_UNIT_CHARS for u in found)
    assert all(u.text.startswith("**Big list**:\n- item ") for u in found)
    assert sum(u.text.count("\n- item ") for u in found) == 40
    rows = "".join(f"| {n} | " + "cell " * 30 + "|\n" for n in range(40))
    table = units("| n | text |\n|---|---|\n" + rows).units
    assert len(table) > 1 and all(u.text.startswith("| n | text |\n|---|---|\n") for u in table)


def test_the_chinese_workspace_becomes_whole_memories(tmp_path):
    memory = units((DATA / "openclaw-zh" / "MEMORY.md").read_text()).units
    assert len(memory) == 22
    assert not [u for u in memory if u.text.rstrip().endswith((":", "："))]  # no bare label became a memory
    allergy = next(u for u in memory if u.text.startswith("对花生过敏"))
    assert "随身带肾上腺素笔" in allergy.text and allergy.section == ("👤 关于用户", "饮食偏好")
    stack = next(u for u in memory if u.title == "技术栈")
    assert stack.text.count("|") > 12 and "只监听 127.0.0.1" in stack.text
    assert all(len(u.text) >= 4 for u in memory)
