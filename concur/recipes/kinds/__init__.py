"""The built-in figure kinds (`concur/components.toml`, `[figure]`): one module each, its recipe fields and its drawing."""
