"""Permutation averaging: a few-shot answer averaged over orderings of its examples.

`cotplan.permutation_average` (`average`) scores a query under several orderings of its
few-shot examples (`schedules`), reading each candidate's probability (`scoring`) from a prompt
built by `fewshot`, and returns the averaged `AnswerDistribution` with its interval; `evaluate`
measures what averaging buys (spread versus the number of orderings). `cotplan answer` runs it.
"""

__all__: list[str] = []
