"""The engine's core: parameter rules and count statistics; imports nothing else from cvbayes."""
