// Postgres module
