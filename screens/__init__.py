"""The Textual front end. Screens receive domain objects from advisor/ and never run tools."""
