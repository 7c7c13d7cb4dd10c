# based on: ada_full
# p02_bytes_vs_str: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% count_word
def count_word(labels, word):
    """How many entries of labels equal word."""
    count = 0
    for label in labels.numpy():
        if label == word:
            count += 1
    return count
