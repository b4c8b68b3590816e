"""Datasets: LETOR / SVMlight readers, packaged real data and synthetic generators."""

from __future__ import annotations

from ._containers import RankingDataset, RankingSplit
from .svmlight import read_svmlight, write_svmlight

__all__ = ["RankingDataset", "RankingSplit", "read_svmlight", "write_svmlight"]
