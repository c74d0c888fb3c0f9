"""Records of laws and their documents."""
