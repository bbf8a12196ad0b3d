"""The study report: one self-contained HTML page.

`content` computes everything the page shows from a results table (what was run, the EM
table, the concurrence matrices with intervals, the recipes' figures, the agreement with
the published table, and the warnings where a statistic rests on too few approaches);
`provenance` reads what was run from the store, the job directories and a study's plan;
`page` renders it with the package's templates and writes it atomically.
"""
