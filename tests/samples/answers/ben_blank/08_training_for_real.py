# ben_blank hands in the release untouched: no answer cells.
