"""Modeling approaches behind one interface: train on a split, answer a test split.

The approach contract: an approach trains on a train split with given
hyperparameters and a seed, then returns `{qid: answer_text}` for a test split. Nothing
else crosses the boundary; the framework, not the approach, scores the answers.
"""
