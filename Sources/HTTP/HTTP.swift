// HTTP module
