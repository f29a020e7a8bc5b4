"""Reliability diagram and confidence histogram as one PNG (matplotlib, Agg, no pyplot).

A Figure with an Agg canvas keeps no global state and needs no display, so the command works
on servers and in tests without touching the user's matplotlib backend.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .metrics import CalibrationMetrics


def reliability_figure(metrics: CalibrationMetrics, title: Optional[str] = None) -> Figure:
    fig = Figure(figsize=(6.0, 7.0), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    width = 1.0 / metrics.n_bins
    # the bins that hold decisions: accuracy and mean confidence are numbers there
    filled = [(b.lower, b.accuracy, b.mean_confidence) for b in metrics.bins
              if b.accuracy is not None and b.mean_confidence is not None]
    lefts = [lower for lower, _, _ in filled]
    accuracy = [acc for _, acc, _ in filled]
    confidence = [conf for _, _, conf in filled]

    top.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect calibration")
    top.bar(lefts, accuracy, width=width, align="edge", color="#4C72B0",
            edgecolor="white", label="accuracy")
    # the gap between what the model claimed and what it got, drawn from accuracy to confidence
    top.bar(lefts, [conf - acc for _, acc, conf in filled],
            bottom=accuracy, width=width, align="edge", color="#C44E52",
            alpha=0.35, hatch="//", edgecolor="#C44E52", label="gap to mean confidence")
    top.plot(confidence, accuracy, "o", color="black",
             markersize=3, label="(mean confidence, accuracy)")
    top.set_xlim(0, 1)
    top.set_ylim(0, 1)
    top.set_ylabel("accuracy")
    top.set_title(title or
                  f"reliability: n={metrics.n}, ECE={metrics.ece:.4f}, MCE={metrics.mce:.4f}")
    top.legend(loc="lower right", fontsize="small", framealpha=0.9)

    bottom.bar([b.lower for b in metrics.bins], [b.count for b in metrics.bins], width=width,
               align="edge", color="#55A868", edgecolor="white")
    bottom.set_xlim(0, 1)
    bottom.set_xlabel("confidence (posterior of the chosen alternative)")
    bottom.set_ylabel("decisions")
    return fig


def write_plot(path: Union[str, Path], metrics: CalibrationMetrics,
               title: Optional[str] = None) -> None:
    fig = reliability_figure(metrics, title)
    fig.savefig(str(path), format="png", dpi=100)
