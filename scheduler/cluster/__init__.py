"""Cluster views: where capacity and node load come from (one port, several sources)."""
