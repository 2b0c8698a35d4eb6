import API
