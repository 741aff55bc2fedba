"""The engine: intents (what to do), actions (how), engines and the reactor."""
