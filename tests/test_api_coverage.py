from scripts.api_coverage import TARGET, render


def test_api_coverage_md_is_current() -> None:
    """Regenerate with `make coverage` when routes change."""
    assert TARGET.read_text() == render()
