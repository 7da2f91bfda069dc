"""Split planning: cut one CI cell's tests into jobs, predict their walls, and shard by duration."""

from analysis.split.options import SplitOptions
from analysis.split.plan import plan_cells, plan_splits
from analysis.split.result import SplitPlan
from analysis.split.shards import Shard, assign_shards

__all__ = ["Shard", "SplitOptions", "SplitPlan", "assign_shards", "plan_cells", "plan_splits"]
