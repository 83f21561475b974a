"""What gates recall, said once: `keepmind status` (and the overview), `keepmind doctor` and the
models page all read `gate_health`, so none of them calls the intended offline setup degraded
while another calls it healthy.

Recall is gated by the cross-encoder when it is loaded, else by the offline feature gate of a
calibrated embedder, else (no query vector) by the lexical gate. A missing cross-encoder is a
degradation only when nothing model-based takes its place.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GateHealth:
    kind: str     # "cross_encoder" | "feature" | "lexical" | "off" | "none"
    status: str   # "ok" | "disabled" | "degraded"
    summary: str  # one line for people, without a command to run
    reason: str | None = None  # what `keepmind status` lists (the loader's own words); None unless degraded

    @property
    def degraded(self) -> bool:
        return self.status == "degraded"


def gate_health(*, setting: bool | None, embeddings_enabled: bool, gate_id: str,
                cross_encoder: str | None = None, threshold: float | None = None,
                threshold_source: str | None = None, offline_for: str | None = None,
                missing: str | None = None, problem: str | None = None) -> GateHealth:
    """The gate recall uses now and whether that is the intended setup.

    `setting` is memory.recall.gate.enabled (None: on, the cross-encoder following embeddings);
    `cross_encoder` the loaded cross-encoder's id; `offline_for` the embedder whose calibrated
    feature gate is ready; `missing` why the cross-encoder is not loaded ("not installed", "still
    loading"...); `problem` the loader's reason, which status lists when this is a degradation.
    """
    if setting is False:
        return GateHealth("off", "disabled", "off (setting): the floor's output is injected")
    if cross_encoder is not None:
        calibration = f", threshold {threshold:.3f} ({threshold_source})" if threshold is not None else ""
        return GateHealth("cross_encoder", "ok", f"cross-encoder {cross_encoder}{calibration}")
    why = missing or "not loaded"
    if offline_for is not None:
        return GateHealth("feature", "ok", f"offline feature gate calibrated for {offline_for} (the cross-encoder "
                                           f"{gate_id} is {why}; installed, it reads the message and each "
                                           "memory together and decides instead)")
    if not embeddings_enabled:
        if setting is None:
            return GateHealth("lexical", "disabled", "embeddings are off: recall is lexical")
        return GateHealth("lexical", "degraded", f"embeddings are off: recall is lexical, and the cross-encoder "
                                                 f"{gate_id} the settings ask for is {why}", problem)
    return GateHealth("none", "degraded", f"no cross-encoder ({gate_id} is {why}) and no calibrated embedder "
                                          "loaded, so no model gate decides: recall is lexical", problem)


__all__ = ["GateHealth", "gate_health"]
