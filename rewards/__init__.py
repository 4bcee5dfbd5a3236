"""pairrl rewards: sandboxed execution, task checkers, verification reward, rating parsing.

No torch here, ever: this package must import on a machine without it.
"""

from pairrl.errors import InputError
from pairrl.rewards.answers import (
    MathOutcome,
    TaskLabeller,
    answer_clusters,
    candidate_job,
    is_answer_task,
    label_jobs,
    math_answer_reward,
)
from pairrl.rewards.code_extract import extract_code
from pairrl.rewards.correctness import CorrectnessOutcome, correctness_reward
from pairrl.rewards.executor import Executor
from pairrl.rewards.plain_data import OpaqueValue
from pairrl.rewards.ratings import (
    RatingFailure,
    answer_part,
    class_balance_weights,
    normalise_rating,
    parse_pair_ratings,
    parse_rating,
    verification_reward,
)
from pairrl.rewards.results import STATUSES, CallOutput, ExecJob, ExecResult
from pairrl.rewards.sandbox import SandboxLimits, SandboxUnavailable
from pairrl.rewards.task_loaders import TaskFormatError, load_tasks, row_to_task
from pairrl.rewards.tasks import AnswerTests, AssertTests, IOTests, StdioTests, Task

__all__ = [
    "STATUSES",
    "AnswerTests",
    "AssertTests",
    "CallOutput",
    "CorrectnessOutcome",
    "ExecJob",
    "ExecResult",
    "Executor",
    "IOTests",
    "InputError",
    "MathOutcome",
    "OpaqueValue",
    "RatingFailure",
    "SandboxLimits",
    "SandboxUnavailable",
    "StdioTests",
    "Task",
    "TaskFormatError",
    "TaskLabeller",
    "answer_clusters",
    "answer_part",
    "candidate_job",
    "class_balance_weights",
    "correctness_reward",
    "extract_code",
    "is_answer_task",
    "label_jobs",
    "load_tasks",
    "math_answer_reward",
    "normalise_rating",
    "parse_pair_ratings",
    "parse_rating",
    "row_to_task",
    "verification_reward",
]
