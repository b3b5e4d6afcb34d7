"""The research companion: the paper's experiments, the lab, and the reproduction.

This side measures the claims of "LLMs are Bayesian, in Expectation, not in Realization"
against exact references. It uses the product (the rest of `cotplan`) freely; the product never
imports it (an import-linter contract in pyproject.toml holds that).

- `cotplan.research.experiments`: exchangeable sequences, predictors with exact Bayesian
  references, the paper's experiments and the words of their verdicts.
- `cotplan.research.lab`: small transformers trained on CPU where the mechanism is known: the
  positional-encoding lab, and `lab.reasoning`, reasoning models served as
  ``connect("lab:FAMILY")``.
- `cotplan.research.reproduction`, `cotplan.research.reproduce_plan`,
  `cotplan.research.provenance`: the reproduction report with the lab's rows, the steps and
  ledger of `cotplan reproduce`, and what a report ran on.
- `cotplan.research.charts`: the charts of these results, found by `cotplan.charts.chart`.
"""

__all__: list[str] = []
