"""Progress bars for GBDT training (tqdm when installed; nothing otherwise)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xgboost.callback import TrainingCallback

__all__ = ["lightgbm_progress", "xgboost_progress"]


def _bar(total: int, desc: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=int(total), desc=desc, unit="round", leave=False)


class _LightGBMProgress:
    """The callback :func:`lightgbm_progress` returns (a class, so its attributes are typed)."""

    def __init__(self, bar: Any) -> None:
        # An instance attribute, not a class one: `lightgbm.train` fills a missing `order` with
        # `cb.__dict__.setdefault`, which would shadow a class attribute.
        self.order = 40  # after LightGBM's own callbacks (early stopping has order 30)
        self.bar = bar

    def __call__(self, env: Any) -> None:
        bar = self.bar
        if bar is None:
            return
        bar.update(1)
        if env.evaluation_result_list:
            _, name, value, _ = env.evaluation_result_list[0][:4]
            bar.set_postfix({name: f"{value:.4g}"})
        if env.iteration + 1 >= env.end_iteration:
            bar.close()


def lightgbm_progress(total: int, desc: str = "boosting") -> Callable[[Any], None]:
    """A :func:`lightgbm.train` callback that advances a tqdm bar each round."""
    return _LightGBMProgress(_bar(total, desc))


def xgboost_progress(total: int, desc: str = "boosting") -> TrainingCallback:
    """An :class:`xgboost.callback.TrainingCallback` that advances a tqdm bar each round."""
    from xgboost.callback import TrainingCallback

    class _Progress(TrainingCallback):
        def __init__(self):
            super().__init__()
            self.bar = None

        def before_training(self, model):
            self.bar = _bar(total, desc)
            return model

        def after_iteration(self, model, epoch, evals_log) -> bool:
            if self.bar is not None:
                self.bar.update(1)
            return False

        def after_training(self, model):
            if self.bar is not None:
                self.bar.close()
            return model

    return _Progress()
