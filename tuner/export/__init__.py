"""Launch profiles exported from a study, and checks of running servers against them."""
