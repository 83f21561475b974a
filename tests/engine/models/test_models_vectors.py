"""VectorIndex: top-k by cosine, in-place updates and removals, growth, floors."""

import numpy as np
import pytest

from keepmind.engine.models.vectors import VectorIndex, from_blob, to_blob


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


def test_a_search_narrowed_to_places_and_time_takes_its_top_k_among_those_rows_only():
    index = VectorIndex("m", 2, capacity=16)
    near, far = np.array([1.0, 0.0], dtype=np.float32), np.array([0.6, 0.8], dtype=np.float32)
    ids = [f"b{i}" for i in range(40)]
    index.upsert_many(ids, np.stack([near] * 40), [("personal", "b", None)] * 40)   # grows twice
    index.upsert("a", far, ("personal", "a", None))
    index.upsert("old", near, ("personal", "a", 1_000))
    index.upsert("team", far * 0.99, ("team", "a", None))
    index.upsert("unplaced", far * 0.98)
    q = np.array([1.0, 0.0])
    assert "a" not in {i for i, _ in index.search(q, 10)}
    hits = index.search(q, 10, places=[("personal", "a"), ("team", "a")], now=2_000)
    assert [i for i, _ in hits] == ["a", "team", "unplaced"]     # unknown places are never narrowed away
    assert hits[0][1] == pytest.approx(0.6)
    # before its expiry the evidence row is there, and first
    assert [i for i, _ in index.search(q, 2, places=[("personal", "a")], now=500)] == ["old", "a"]
    assert index.search(q, 5, places=[("personal", "nowhere")]) == [("unplaced", pytest.approx(0.588))]
    # without narrowing, every row competes
    assert len(index.search(q, 100)) == 44


def test_places_follow_their_rows_through_removal_updates_and_re_embedding():
    index = VectorIndex("m", 2)
    index.upsert_many(["x", "y", "z"], np.array([[1, 0], [0.9, 0.1], [0.8, 0.2]], dtype=np.float32),
                      [("personal", "p", None), ("personal", "q", None), ("personal", "r", None)])
    assert index.remove("x")   # z moves into x's slot and keeps its own place
    assert [i for i, _ in index.search(np.array([1, 0]), 5, places=[("personal", "r")])] == ["z"]
    index.upsert("y", np.array([0.5, 0.5], dtype=np.float32))   # new text, no place given: keeps "q"
    assert [i for i, _ in index.search(np.array([1, 0]), 5, places=[("personal", "q")])] == ["y"]
    index.set_places({"y": ("team", "q", 10), "gone": ("personal", "q", None)})
    assert index.search(np.array([1, 0]), 5, places=[("personal", "q")]) == []
    assert [i for i, _ in index.search(np.array([1, 0]), 5, places=[("team", "q")], now=5)] == ["y"]
    assert index.search(np.array([1, 0]), 5, places=[("team", "q")], now=10) == []
    with pytest.raises(ValueError):
        index.upsert_many(["w"], np.array([[1, 0]], dtype=np.float32), [])


def test_extend_new_is_upsert_many_for_a_load_and_refuses_known_ids():
    rng = np.random.default_rng(7)
    vecs = _unit(rng, 3000, 24)
    ids = [f"id{i}" for i in range(3000)]
    places = [("personal", f"b{i % 3}", None if i % 5 else 1_000 + i) for i in range(3000)]
    bulk, slow = VectorIndex("m", 24, capacity=16), VectorIndex("m", 24, capacity=16)
    for start in range(0, 3000, 700):  # in chunks, growing on the way, as load_index does
        bulk.extend_new(ids[start:start + 700], vecs[start:start + 700], places[start:start + 700])
    slow.upsert_many(ids, vecs, places)
    q = _unit(rng, 1, 24)[0]
    for where, now in ((None, None), ([("personal", "b1")], None), ([("personal", "b2")], 2_000)):
        assert bulk.search(q, 40, places=where, now=now) == slow.search(q, 40, places=where, now=now)
    bulk.remove("id5")
    assert not bulk.has("id5") and bulk.vector("id6") is not None
    with pytest.raises(ValueError):
        bulk.extend_new(["id7"], vecs[:1], places[:1])


def test_a_scan_split_across_cores_gives_the_same_scores_bit_for_bit(monkeypatch):
    from keepmind.engine.models import vectors as vec

    monkeypatch.setattr(vec.os, "cpu_count", lambda: 3)
    vec.scan_on_one_thread()  # as a running Keepmind scans
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((vec.SPLIT_ROWS + 123, 16)).astype(np.float32)
    for query in rng.standard_normal((4, 16)).astype(np.float32):
        assert np.array_equal(vec.scan(matrix, query), matrix @ query)


def test_a_large_index_loads_into_populated_memory_that_works_like_any_array(monkeypatch):
    from keepmind.engine.models import vectors as vec

    monkeypatch.setattr(vec, "POPULATE_FROM", 1)  # every matrix counts as large here
    index = vec.VectorIndex("m", 4, capacity=10)
    assert index._matrix.flags.writeable and index._matrix.shape == (16, 4)  # at least 16 rows
    assert isinstance(index._matrix.base, np.ndarray) and not index._matrix.flags.owndata  # the mapping
    vectors = np.eye(4, dtype=np.float32)
    index.upsert_many(["a", "b", "c", "d"], vectors)
    for i in range(20):  # grows past the populated capacity
        index.upsert(f"x{i}", np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32))
    assert [i for i, _ in index.search(np.array([0, 0, 1, 0], dtype=np.float32), 1)] == ["c"]
    assert np.array_equal(index.vector("b"), vectors[1])


# -- the quantized form (one byte per dimension, re-ranked by the stored vectors) ----------------

def _quantized(vecs, ids, *, places=None, quantize_from=1, reads=None):
    """A quantized index over `vecs` whose exact reader is a dict of the same vectors (as the store's
    `memory_embeddings` is), and a float index over the same rows to compare it with."""
    from keepmind.engine.models import vectors as vec

    stored = dict(zip(ids, vecs))

    def reader(wanted):
        if reads is not None:
            reads.append(len(wanted))
        return {i: stored[i] for i in wanted if i in stored}
    quantized = vec.VectorIndex("m", vecs.shape[1], exact=reader, quantize_from=quantize_from)
    exact = vec.VectorIndex("m", vecs.shape[1])
    for index in (quantized, exact):
        index.upsert_many(ids, vecs, places)
    return quantized, exact, stored


def test_a_quantized_search_gives_the_exact_searchs_hits_and_scores():
    """The bench's yardstick (top-50 overlap with an exact scan, >= 0.98) on 60 queries near the
    data, as recall's are: here every hit and every score is the exact one."""
    rng = np.random.default_rng(11)
    vecs = _unit(rng, 4000, 96)
    ids = [f"id{i}" for i in range(4000)]
    reads: list[int] = []
    quantized, exact, _ = _quantized(vecs, ids, reads=reads)
    assert quantized.quantized and not exact.quantized
    assert quantized.nbytes < exact.nbytes / 2
    overlaps = []
    for n in range(60):
        q = vecs[n * 7] + 0.6 * _unit(rng, 1, 96)[0]
        q /= np.linalg.norm(q)
        want = [f"id{i}" for i in np.argsort(-(vecs @ q), kind="stable")[:50]]
        got = quantized.search(q, 50)
        overlaps.append(len({i for i, _ in got} & set(want)) / 50)
        same = exact.search(q, 50)  # the same ids in the same order, with the same scores (to float32's last bits)
        assert [i for i, _ in got] == [i for i, _ in same]
        assert [c for _, c in got] == pytest.approx([c for _, c in same], abs=1e-6)
    assert min(overlaps) == 1.0
    assert set(reads) == {100}  # k + max(k/2, 50) rows re-ranked a search


def test_a_quantized_search_never_returns_another_scopes_memory_nor_loses_its_own_best_to_them():
    """5,000 memories of another boundary (and 2,000 expired ones of this one) lie nearer the query
    than this boundary's 20: narrowed before its top k, the byte scan keeps only the scope's rows,
    so the re-ranked hits are exactly the scope's best, best first."""
    rng = np.random.default_rng(3)
    q = _unit(rng, 1, 64)[0]
    crowd = q + 0.3 * _unit(rng, 7000, 64)
    crowd /= np.linalg.norm(crowd, axis=1, keepdims=True)
    mine = q + 1.2 * _unit(rng, 20, 64)
    mine /= np.linalg.norm(mine, axis=1, keepdims=True)
    vecs = np.concatenate([crowd, mine]).astype(np.float32)
    ids = [f"other{i}" for i in range(5000)] + [f"old{i}" for i in range(2000)] + [f"mine{i}" for i in range(20)]
    places = ([("personal", "elsewhere", None)] * 5000 + [("personal", "home", 1_000)] * 2000
              + [("personal", "home", None)] * 20)
    quantized, exact, _ = _quantized(vecs, ids, places=places)
    assert all(c > (mine @ q).max() for c in (crowd @ q)[:100])  # the crowd is nearer
    hits = quantized.search(q, 10, places=[("personal", "home")], now=2_000)
    best = [f"mine{i}" for i in np.argsort(-(mine @ q), kind="stable")[:10]]
    assert [i for i, _ in hits] == best
    assert [c for _, c in hits] == pytest.approx([c for _, c in exact.search(q, 10, places=[("personal", "home")],
                                                                             now=2_000)], abs=1e-6)
    assert len(quantized.search(q, 100, places=[("personal", "home")], now=2_000)) == 20
    # before the expiry, the old evidence of this boundary is visible too, and nearer
    assert quantized.search(q, 5, places=[("personal", "home")], now=500)[0][0].startswith("old")


def test_an_index_turns_to_bytes_as_it_grows_and_keeps_working_through_updates_and_removals():
    from keepmind.engine.models import vectors as vec

    rng = np.random.default_rng(9)
    vecs = _unit(rng, 700, 32)
    ids = [f"id{i}" for i in range(700)]
    stored = dict(zip(ids, vecs))
    index = vec.VectorIndex("m", 32, capacity=16, exact=lambda w: {i: stored[i] for i in w if i in stored},
                            quantize_from=500)
    twin = vec.VectorIndex("m", 32, capacity=16)
    for start in range(0, 700, 100):
        for ix in (index, twin):
            ix.upsert_many(ids[start:start + 100], vecs[start:start + 100])
        assert index.quantized == (start + 100 >= 500)
    q = vecs[3]
    assert [i for i, _ in index.search(q, 20)] == [i for i, _ in twin.search(q, 20)]
    stored["id3"] = vecs[4]
    for ix in (index, twin):
        ix.upsert("id3", vecs[4])   # re-embedded
        assert ix.remove("id699") and not ix.remove("id699")
    assert [i for i, _ in index.search(vecs[4], 3)] == [i for i, _ in twin.search(vecs[4], 3)]
    assert np.array_equal(index.vector("id3"), vecs[4]) and index.vector("id699") is None
    assert set(index.vectors_of(["id1", "id2", "nope"])) == {"id1", "id2"}
    # a stored vector not found (written after the reader's snapshot began) keeps its byte score
    del stored["id5"]
    hit = dict(index.search(vecs[5], 5))
    assert hit["id5"] == pytest.approx(1.0, abs=0.02)


def test_the_byte_product_is_the_integer_dot_product_of_the_codes():
    from keepmind.engine.models import vectors as vec

    rng = np.random.default_rng(4)
    rows = _unit(rng, vec.SPLIT_ROWS + 77, 48)   # split across the scan threads
    codes, scales = vec.quantize(rows)
    assert codes.dtype == np.uint8 and codes.min() >= 1 and codes.max() <= 255
    q = _unit(rng, 1, 48)[0]
    _, top = vec._integer_product()  # 127, or 63 where the kernel sums pairs in 16 bits
    assert top in (127, 63)
    q_scale = float(np.abs(q).max()) / top
    ints = (codes.astype(np.int64) - 128) @ np.rint(q / q_scale).astype(np.int64)
    assert np.array_equal(vec.scan_codes(codes, scales, q), ints.astype(np.float32) * scales * np.float32(q_scale))
    assert np.abs(vec.scan_codes(codes, scales, q) - rows @ q).max() < 0.02


def test_the_byte_product_is_exact_for_codes_and_queries_at_the_ends_of_their_range():
    """Full-range codes and a full-range query: the pairs of products a kernel without VNNI sums in
    16 bits saturate with a query of -127..127 (on such a CPU, nearly every row came out wrong)."""
    from keepmind.engine.models import vectors as vec

    _, top = vec._integer_product()
    rng = np.random.default_rng(11)
    codes = rng.integers(1, 256, size=(vec.SPLIT_ROWS + 5, 64), dtype=np.uint8)
    signed = rng.choice(np.array([-top, 1 - top, top - 1, top]), size=64)
    query = signed.astype(np.float32) / top  # peak 1: quantized back to exactly `signed`
    exact = (codes.astype(np.int64) - 128) @ signed.astype(np.int64)
    scales = np.ones(len(codes), dtype=np.float32)
    got = vec.scan_codes(codes, scales, query) * np.float32(top)
    assert np.array_equal(np.rint(got).astype(np.int64), exact)
