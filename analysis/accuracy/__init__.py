"""Did the plan come true: predicted jobs against the runs that executed them, and calibration."""

from analysis.accuracy.calibration import Calibration, calibrate
from analysis.accuracy.plan_accuracy import PlanAccuracy, plan_accuracy
from analysis.accuracy.plan_record import PlanRecord

__all__ = ["Calibration", "PlanAccuracy", "PlanRecord", "calibrate", "plan_accuracy"]
