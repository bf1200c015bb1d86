"""A camera's picture: scene, renderer, encoder and the streams that carry them."""
