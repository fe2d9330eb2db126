"""One module per experiment: how to make its data, run one method on it, and score it."""
