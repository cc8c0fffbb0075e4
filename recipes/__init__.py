"""Plans of commands: ordered, previewable steps built from a recommendation.

Recipes build plans; they never execute anything (filled by the apply issue).
"""
