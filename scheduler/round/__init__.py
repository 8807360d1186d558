"""One scheduling round: the snapshot it reads, the round-store port it reads and writes through,
and the loop that runs snapshot → decide → realize → record."""
