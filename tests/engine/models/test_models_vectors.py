"""VectorIndex: top-k by cosine, in-place updates and removals, growth, floors."""

import numpy as np
import pytest

from engine.models.vectors import VectorIndex, from_blob, to_blob


def _unit(rng, n, d):
    m = rng.normal(size=(n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_search_returns_the_exact_top_k_best_first():
    rng = np.random.default_rng(1)
    vecs = _unit(rng, 3000, 24)  # grows from the initial capacity several times
    index = VectorIndex("m", 24, capacity=16)
    index.upsert_many([f"id{i}" for i in range(3000)], vecs)
    q = _unit(rng, 1, 24)[0]
    hits = index.search(q, 50)
    expected = np.argsort(-(vecs @ q))[:50]
    assert [h[0] for h in hits] == [f"id{i}" for i in expected]
    assert all(a[1] >= b[1] for a, b in zip(hits, hits[1:]))
    assert len(index.search(q, 10_000)) == 3000


def test_upsert_replaces_and_remove_keeps_the_other_rows_paired():
    index = VectorIndex("m", 2)
    index.upsert_many(["a", "b", "c"], np.array([[1, 0], [0, 1], [-1, 0]], dtype=np.float32))
    assert index.search(np.array([1, 0]), 1) == [("a", pytest.approx(1.0))]
    index.upsert("a", np.array([0, -1], dtype=np.float32))
    assert index.search(np.array([0, -1]), 1) == [("a", pytest.approx(1.0))] and len(index) == 3
    assert index.remove("a") and not index.remove("a")
    assert len(index) == 2 and not index.has("a")
    assert np.allclose(index.vector("c"), [-1, 0]) and np.allclose(index.vector("b"), [0, 1])
    assert [h[0] for h in index.search(np.array([-1, 0]), 2)] == ["c", "b"]


def test_min_cosine_drops_weak_hits_and_empty_or_wrong_queries_are_handled():
    index = VectorIndex("m", 2)
    assert index.search(np.array([1, 0]), 5) == []
    index.upsert_many(["a", "b"], np.array([[1, 0], [0, 1]], dtype=np.float32))
    assert [h[0] for h in index.search(np.array([1, 0]), 5, min_cosine=0.5)] == ["a"]
    with pytest.raises(ValueError):
        index.search(np.array([1, 0, 0]), 5)


def test_blobs_round_trip_as_little_endian_float32():
    v = np.array([0.25, -1.5, 3.0], dtype=np.float32)
    assert np.array_equal(from_blob(to_blob(v), 3), v) and len(to_blob(v)) == 12
