"""The recipe of the `wordnet_topics` preset."""
