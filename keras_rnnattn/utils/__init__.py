"""Small helpers without Keras: worker processes (`processes`)."""
