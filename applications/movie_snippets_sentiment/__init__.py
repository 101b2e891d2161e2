"""The recipe of the `movie_snippets_sentiment` preset."""
