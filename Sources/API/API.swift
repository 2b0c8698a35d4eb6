// API module
