/// The SQL files of the repository's `migrations/` directory, compiled in by the
/// `EmbedFiles` build plugin as `EmbeddedMigrations.files`: the binary carries its schema,
/// so `exosphere serve` needs no file beside it and starts from any working directory.
public enum Migrations {}
