"""Realizers apply a round's allocation changes (one port, several ways)."""
