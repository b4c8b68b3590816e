"""Datasets: LETOR / SVMlight readers, packaged real data and synthetic generators.

Readers
    :func:`read_svmlight`, :func:`write_svmlight` (compiled chunked parser; plain or gzip).
Packaged real data (``datasets/`` in the repository, ``selrank/_packaged_data`` in a wheel,
or ``$SELRANK_DATA_DIR``)
    :func:`load_letor` (``"mq2008"``, ``"ohsumed"``, or ``path=`` a MSLR-WEB10K/30K, Yahoo or
    Istella directory) and :func:`load_dwell` (``"yoochoose-100k"``).
Public benchmarks from a user's download
    :func:`load_benchmark` (``"mslr-web10k"``, ``"mslr-web30k"``, ``"istella-s"``,
    ``"mq2007"``: official layout and counts checked) and :func:`load_ranking_folder` (any
    LETOR-style folder), both through a binary cache (:func:`read_svmlight_cached`).
Generators
    :func:`make_mslr_like`, :func:`make_dwell`, and the underspecification data of the paper:
    :func:`make_bust_data` (Theorem 1), :func:`make_two_feature_data` (Appendix F),
    :func:`make_one_large_score_data` and :func:`make_symmetric_score_data` (Appendix I).

Needs ``polars`` (``selrank[data]``) and, for the SVMlight parser, ``numba``
(``selrank[fast]``). This package never imports :mod:`selrank.losses`.
"""

from __future__ import annotations

from ._containers import RankingDataset, RankingSplit
from ._paths import DATA_DIR_ENV, data_dirs
from .benchmarks import (
    BENCHMARKS,
    CACHE_DIR_ENV,
    Benchmark,
    benchmark_files,
    cache_dir,
    load_benchmark,
    load_ranking_files,
    load_ranking_folder,
    ranking_folder_files,
    ranking_folder_folds,
    read_svmlight_cached,
)
from .dwell import (
    DWELL_DATASETS,
    DWELL_FEATURES,
    DwellDataset,
    DwellSplit,
    dwell_dataset,
    load_dwell,
    read_session_clicks,
)
from .letor import LETOR_DATASETS, fold_subsets, load_letor
from .lightgbm_files import lightgbm_query_file, read_lightgbm_ranking
from .svmlight import read_svmlight, write_svmlight
from .synthetic import (
    MSLR_LABEL_PROPORTIONS,
    BustData,
    StochasticScores,
    SyntheticDwell,
    make_bust_data,
    make_dwell,
    make_mslr_like,
    make_one_large_score_data,
    make_symmetric_score_data,
    make_two_feature_data,
)

__all__ = [
    "BENCHMARKS",
    "CACHE_DIR_ENV",
    "DATA_DIR_ENV",
    "DWELL_DATASETS",
    "DWELL_FEATURES",
    "LETOR_DATASETS",
    "MSLR_LABEL_PROPORTIONS",
    "Benchmark",
    "BustData",
    "benchmark_files",
    "DwellDataset",
    "DwellSplit",
    "RankingDataset",
    "RankingSplit",
    "StochasticScores",
    "SyntheticDwell",
    "cache_dir",
    "data_dirs",
    "dwell_dataset",
    "fold_subsets",
    "load_benchmark",
    "load_dwell",
    "load_letor",
    "load_ranking_files",
    "load_ranking_folder",
    "make_bust_data",
    "make_dwell",
    "make_mslr_like",
    "make_one_large_score_data",
    "make_symmetric_score_data",
    "make_two_feature_data",
    "ranking_folder_files",
    "ranking_folder_folds",
    "read_session_clicks",
    "read_svmlight_cached",
    "read_lightgbm_ranking",
    "lightgbm_query_file",
    "read_svmlight",
    "write_svmlight",
]
