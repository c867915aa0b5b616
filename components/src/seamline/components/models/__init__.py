"""Models: components that turn documents into examples and examples into vectors."""
